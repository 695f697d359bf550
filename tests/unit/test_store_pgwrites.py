"""PostgreSQL's one-statement writes (`store.pgwrites`) keep what the shared
transaction path keeps: the same sequence numbers, ordinals (rewinds included),
previews and search text as SQLite's append, refusals that write nothing, and the
journal chunks that waited through an outage written first."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psycopg
import pytest

from tests.roundtrips import RoundTrips
from threadline.store.base import NewEvent, Owner, SessionStore, StoreConflict
from threadline.store.postgres import PostgresStore
from threadline.store.sqlite import EventStore


def message(mid: str, role: str, words: str) -> dict[str, object]:
    return {"messageId": mid, "role": role, "content": [{"type": "text", "text": words}]}


def said(kind: str, mid: str, role: str, words: str) -> NewEvent:
    return NewEvent(kind, {"message": message(mid, role, words)}, (mid,))


def replace(count: int, *msgs: dict[str, object]) -> NewEvent:
    """A compaction's rewrite: the count starts again at ``count``, then ``msgs``."""
    ids = tuple(str(m["messageId"]) for m in msgs)
    return NewEvent("context_replace", {"messages": list(msgs)}, ids, message_count=count)


BATCHES = [
    [said("user_message", "u1", "user", "  \nfirst prompt line\nmore")],
    [
        said("assistant_message", "a1", "assistant", "an answer"),
        said("user_message", "u2", "user", "second prompt"),
    ],
    [NewEvent("config", {"model": "m"}, ())],
    # messages before and after a rewind in one batch
    [
        said("assistant_message", "a2", "assistant", "before the cut"),
        replace(1, message("r1", "assistant", "a summary"), message("r2", "user", "kept")),
        said("assistant_message", "a3", "assistant", "after the cut"),
    ],
    [said("user_message", "u3", "user", "")],  # no text: not indexed
]


def fill(store: SessionStore) -> None:
    store.create_session("s1", "/tmp", {"model": "m"}, "t0")
    for i, batch in enumerate(BATCHES):
        store.append("s1", batch, f"t{i + 1}", expected_seq=store.get_session("s1").last_seq)  # type: ignore[union-attr]


def test_one_statement_appends_write_what_the_shared_path_writes(
    pg_url: str, tmp_path: Path
) -> None:
    lite, pg = EventStore(tmp_path / "db.sqlite"), PostgresStore(pg_url)
    try:
        fill(lite)
        fill(pg)
        a, b = lite.get_session("s1"), pg.get_session("s1")
        assert a is not None and b is not None
        assert (
            (b.last_seq, b.message_count, b.preview, b.updated_at)
            == (
                a.last_seq,
                a.message_count,
                a.preview,
                a.updated_at,
            )
            == (8, 5, "first prompt line", "t5")
        )
        dump = lite.dump_session("s1")
        assert dump is not None
        with psycopg.connect(pg_url) as conn:
            rows = conn.execute(
                "SELECT message_id, seq, ordinal FROM tl_messages WHERE session_id='s1' "
                "ORDER BY seq, ordinal"
            ).fetchall()
            texts = conn.execute(
                "SELECT message_id, role, body FROM tl_texts WHERE session_id='s1' "
                "ORDER BY message_id"
            ).fetchall()
        assert sorted(rows) == sorted(dump.messages)
        assert ("r2", 6, 3) in rows and ("a3", 7, 4) in rows  # counted from the rewind
        assert [t[0] for t in texts] == ["a1", "a2", "a3", "r1", "r2", "u1", "u2"]
        assert [e.kind for e in pg.load_events("s1")] == [e.kind for e in lite.load_events("s1")]
        for store in (lite, pg):
            hits = store.search(["summary"], None, 10, 0)
            assert [(h.session_id, h.message_id) for h in hits] == [("s1", "r1")]
    finally:
        lite.close()
        pg.close()


def test_a_refused_append_writes_nothing_and_tells_nobody(pg_url: str) -> None:
    writer, watcher = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        writer.create_session("s1", "/tmp", {}, "t0")
        writer.append("s1", [said("user_message", "u1", "user", "hi")], "t1")
        before = watcher.change_token()
        with pytest.raises(StoreConflict):
            writer.append("s1", [said("user_message", "u2", "user", "x")], "t2", expected_seq=0)
        with pytest.raises(KeyError):
            writer.append("nope", [said("user_message", "u3", "user", "x")], "t2")
        assert watcher.change_token() == before
        row = writer.get_session("s1")
        assert row is not None and (row.last_seq, row.message_count, row.updated_at) == (
            1,
            1,
            "t1",
        )
        assert writer.search(["x"], None, 10, 0) == []
        # a title is one statement too, and replaces the indexed one
        writer.update_session("s1", title="old words")
        writer.update_session("s1", title="new words", now="t9")
        assert watcher.change_token() > before
        assert [h.role for h in writer.search(["words"], None, 10, 0)] == ["title"]
        assert writer.search(["old"], None, 10, 0) == []
        row = writer.get_session("s1")
        assert row is not None and (row.title, row.updated_at) == ("new words", "t9")
    finally:
        writer.close()
        watcher.close()


def test_chunks_that_waited_through_an_outage_go_before_the_answer(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While journal chunks wait in memory (the server was unreachable), the next
    one-statement write runs in a transaction that writes them first; the answer's
    append ending the stream then clears them with the rest of the journal."""
    store = PostgresStore(pg_url)
    try:
        store.create_session("s1", "/tmp", {}, "t0")
        store.begin_stream("s1", "a1", {"turnId": "t1"})
        real = store._journal_now  # pyright: ignore[reportPrivateUsage]

        def down() -> None:
            from threadline.store.postgres import StoreUnavailable

            raise StoreUnavailable("down", reason="unreachable", where="test")

        monkeypatch.setattr(store, "_journal_now", down)
        store.append_chunks("s1", [("text", "kept ")])
        monkeypatch.setattr(store, "_journal_now", real)
        assert store.inflight_stream("s1").text == ""  # type: ignore[union-attr]
        store.update_session("s1", title="t")  # the next write: the chunk goes first
        stream = store.inflight_stream("s1")
        assert stream is not None and stream.text == "kept "
        store.append("s1", [said("assistant_message", "a1", "assistant", "kept")], "t2", True)
        assert store.inflight_stream("s1") is None
    finally:
        store.close()


def test_a_lease_in_one_statement_only_when_nothing_stands_in_the_way(pg_url: str) -> None:
    """Free, or ours: one statement. Another live process's lease, a dead one's, or a
    journal with no lease: the shared path decides (refused; taken over, said so)."""
    relay = RoundTrips(pg_url)
    store, other = PostgresStore(relay.url), PostgresStore(pg_url)
    try:
        me = Owner("me", os.getpid(), "h", 0.0)
        live = Owner("live", os.getpid(), "h", 0.0)  # this pid: alive
        dead = Owner("dead", 2**22 + 1, "h", 0.0)  # no such pid
        for sid in ("free", "held", "gone", "journal"):
            store.create_session(sid, "/tmp", {}, "t0")
        now = time.time()
        other.acquire_lease("held", live, "turn", "x", now)
        other.acquire_lease("gone", dead, "turn", "x", now)
        other.begin_stream("journal", "m1", {})

        def take(sid: str) -> tuple[bool, str | None, bool, int]:
            before = relay.statements
            got = store.acquire_lease(sid, me, "turn", "t1", time.time())
            took = None if got.took_over is None else got.took_over.owner.id
            return got.mine, took, got.journaled, relay.statements - before

        # no journal, and it says so: the new holder need not look for one
        assert take("free") == (True, None, False, 1)
        assert take("free") == (True, None, False, 1)  # ours again: renewed
        mine, took, _, statements = take("held")
        assert (mine, took) == (False, None) and statements > 1
        assert other.get_lease("held").owner.id == "live"  # type: ignore[union-attr]
        mine, took, journaled, statements = take("gone")
        assert (mine, took, journaled) == (True, "dead", False) and statements > 1
        mine, took, journaled, statements = take("journal")
        assert (mine, took, journaled) == (True, "", True) and statements > 1
        for sid in ("free", "gone", "journal"):
            assert other.get_lease(sid).owner.id == "me"  # type: ignore[union-attr]
    finally:
        store.close()
        other.close()
        relay.close()
