"""What a streamed turn's writes cost on PostgreSQL, in round trips counted on the wire
(`tests.roundtrips`), and that the pipelined transactions keep every rule: committed
before they return, other instances told, a failure rolled back."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from tests.roundtrips import RoundTrips
from threadline.store.base import NewEvent, Owner, StoreConflict, StoreError
from threadline.store.postgres import PostgresStore


def text(t: str) -> dict[str, str]:
    return {"type": "text", "text": t}


def msg(mid: str) -> NewEvent:
    return NewEvent("user_message", {"message": {"messageId": mid}}, (mid,))


@pytest.fixture
def relay(pg_url: str) -> Iterator[RoundTrips]:
    rt = RoundTrips(pg_url)
    try:
        yield rt
    finally:
        rt.close()


def trips(rt: RoundTrips, call: Callable[[], object]) -> int:
    before = rt.count
    call()
    return rt.count - before


def cost(rt: RoundTrips, call: Callable[[], object]) -> tuple[int, int]:
    """The round trips and the statements a call took."""
    before = rt.count, rt.statements
    call()
    return rt.count - before[0], rt.statements - before[1]


def test_a_turns_writes_are_one_statement_each(relay: RoundTrips) -> None:
    """A streamed turn's writes on PostgreSQL: the lease (nothing in its way), each
    append (with its messages, search text, preview and the end of the stream), the
    title, the in-flight record and the release is one statement, its notification
    included (`store.pgwrites`). Counted on the wire, so a write that grows a
    statement or a round trip fails here."""
    store = PostgresStore(relay.url)
    try:
        store.create_session("s1", "/tmp", {"model": "m"}, "t0")
        me = Owner("o1", 1, "h", time.time())
        now = time.time()
        assert cost(relay, lambda: store.acquire_lease("s1", me, "turn", "t1", now)) == (1, 1)
        prompt = NewEvent(
            "user_message",
            {"message": {"messageId": "m1", "role": "user", "content": [text("hi there")]}},
            ("m1",),
        )
        assert cost(relay, lambda: store.append("s1", [prompt], "t1")) == (1, 1)
        assert cost(relay, lambda: store.update_session("s1", title="a title")) == (1, 1)
        assert cost(relay, lambda: store.begin_stream("s1", "m2", {"turnId": "t1"})) == (1, 1)
        assert cost(relay, lambda: store.append_chunks("s1", [("text", "hel")])) == (1, 1)
        assert cost(relay, lambda: store.heartbeat(me, time.time())) == (1, 1)
        assert cost(relay, lambda: store.inflight_stream("s1")) == (1, 1)
        answer = NewEvent(
            "assistant_message",
            {"message": {"messageId": "m2", "role": "assistant", "content": [text("hello")]}},
            ("m2",),
        )
        end = lambda: store.append("s1", [answer], "t2", end_stream=True, expected_seq=1)  # noqa: E731
        assert cost(relay, end) == (1, 1)
        assert cost(relay, lambda: store.release_lease("s1", me)) == (1, 1)
        # and each was committed when it returned: a fresh connection reads it all
        other = PostgresStore(relay.url)
        try:
            row = other.get_session("s1")
            assert row is not None and row.title == "a title" and row.last_seq == 2
            assert row.preview == "hi there" and row.message_count == 2
            assert other.inflight_stream("s1") is None and other.get_lease("s1") is None
            assert [h.session_id for h in other.search(["hello"], None, 10, 0)] == ["s1"]
        finally:
            other.close()
    finally:
        store.close()


def test_pipelined_writes_still_notify_other_instances(pg_url: str) -> None:
    """The notification travels in the transaction's flight and leaves on its commit."""
    writer, watcher = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        writer.create_session("s1", "/tmp", {}, "t0")
        me = Owner("o1", 1, "h", time.time())
        for write in (
            lambda: writer.acquire_lease("s1", me, "turn", "t1", time.time()),
            lambda: writer.append("s1", [msg("m1")], "t1"),
            lambda: writer.update_session("s1", title="t"),
            lambda: writer.begin_stream("s1", "m2", {}),
            lambda: writer.release_lease("s1", me),
        ):
            before = watcher.change_token()
            write()
            assert watcher.change_token() > before
    finally:
        writer.close()
        watcher.close()


def test_a_failed_pipelined_transaction_leaves_nothing_and_the_store_goes_on(
    relay: RoundTrips,
) -> None:
    """A refusal in the work (a stale writer) and an error from the server half way
    through the flight (a message id already used) each roll back all of it; the
    connections go back to the pool idle and the next write works."""
    store = PostgresStore(relay.url)
    try:
        store.create_session("s1", "/tmp", {}, "t0")
        store.append("s1", [msg("m1")], "t1")
        with pytest.raises(StoreConflict):
            store.append("s1", [msg("m2")], "t2", expected_seq=0)
        with pytest.raises(StoreError):
            store.append("s1", [msg("m3"), msg("m1")], "t3")  # m1 exists: refused
        assert [e.payload["message"]["messageId"] for e in store.load_events("s1")] == ["m1"]
        assert store.get_session("s1").last_seq == 1  # type: ignore[union-attr]
        for _ in range(6):  # more than the pool holds: every connection came back usable
            store.append("s1", [msg(f"n{time.monotonic_ns()}")], "t4")
        assert store.get_session("s1").last_seq == 7  # type: ignore[union-attr]
    finally:
        store.close()


def test_a_journal_without_a_lease_is_taken_over_by_the_one_statement_read(
    pg_url: str,
) -> None:
    """Taking a lease reads the lease and the in-flight record in one statement; an
    in-flight record with no lease is still a dead writer's, to recover."""
    store = PostgresStore(pg_url)
    try:
        store.create_session("s1", "/tmp", {}, "t0")
        store.begin_stream("s1", "m1", {"turnId": "t1"})
        got = store.acquire_lease("s1", Owner("o1", 1, "h", 0.0), "turn", "t2", time.time())
        assert got.mine and got.took_over is not None and got.took_over.owner.id == ""
        store.create_session("s2", "/tmp", {}, "t0")
        got = store.acquire_lease("s2", Owner("o1", 1, "h", 0.0), "turn", "t2", time.time())
        assert got.mine and got.took_over is None
    finally:
        store.close()


def test_another_instances_commit_reaches_peek_token_without_a_round_trip(
    relay: RoundTrips, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The feed polls `peek_token` 20 times a second: the listening connection's
    notifications are read as they arrive, by the store's own thread, and polling
    costs no round trip; `change_token` still asks the server (one round trip)."""
    from threadline.store import postgres

    monkeypatch.setattr(postgres, "DRAIN_SECONDS", 60.0)  # no liveness look meanwhile
    watcher = PostgresStore(relay.url)
    writer = PostgresStore(pg_url)
    try:
        writer.create_session("s1", "/tmp", {}, "t0")
        time.sleep(0.2)
        before_token, before_trips = watcher.peek_token(), relay.count
        writer.update_session("s1", title="seen")
        deadline = time.monotonic() + 30
        while watcher.peek_token() == before_token and time.monotonic() < deadline:
            time.sleep(0.01)
        assert watcher.peek_token() > before_token
        assert relay.count == before_trips  # heard, not asked
        own = watcher.peek_token()
        watcher.update_session("s1", title="mine")  # its own commit is not a change
        assert trips(relay, watcher.change_token) == 1
        assert watcher.peek_token() == own
    finally:
        writer.close()
        watcher.close()
