from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from threadline.store.base import Owner, StoreConflict
from threadline.store.owners import current_owner, hostname, lease_ttl
from threadline.store.sqlite import EventStore, NewEvent, StoreError


def msg_event(mid: str) -> NewEvent:
    return NewEvent("user_message", {"message": {"messageId": mid}}, (mid,))


def ids(store: EventStore, sid: str) -> list[str]:
    return [e.payload["message"]["messageId"] for e in store.load_events(sid)]


def test_append_and_load_in_order(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "db.sqlite")
    row = store.create_session("s1", "/tmp", {"model": "m"}, "t0")
    assert row.message_count == 0
    store.append("s1", [msg_event("m1"), msg_event("m2")], "t1")
    store.append("s1", [msg_event("m3")], "t2")
    assert ids(store, "s1") == ["m1", "m2", "m3"]
    row2 = store.get_session("s1")
    assert row2 is not None and row2.message_count == 3 and row2.updated_at == "t2"


def test_fork_reads_the_parent_prefix_and_stays_isolated(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "db.sqlite")
    parent = store.create_session("p", "/tmp", {}, "t0")
    store.append("p", [msg_event(f"m{i}") for i in range(5)], "t1")
    origin, seq, ordinal = store.locate_message("p", "m2") or ("", 0, 0)
    assert (origin, ordinal) == ("p", 3)
    child = store.fork_session("c", parent, origin, seq, ordinal, "m2", "/tmp", "t2")
    assert ids(store, "c") == ["m0", "m1", "m2"]
    assert child.message_count == 3 and child.parent_id == "p"
    store.append("c", [msg_event("c1")], "t3")
    store.append("p", [msg_event("p6")], "t3")
    assert ids(store, "c") == ["m0", "m1", "m2", "c1"]
    assert ids(store, "p")[-1] == "p6" and "c1" not in ids(store, "p")
    # the parent's later messages are not visible from the child
    assert store.locate_message("c", "m4") is None
    assert store.locate_message("c", "m1") is not None


def test_deleting_a_parent_keeps_children_readable(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "db.sqlite")
    parent = store.create_session("p", "/tmp", {}, "t0")
    store.append("p", [msg_event("m0"), msg_event("m1")], "t1")
    store.fork_session("c", parent, "p", 2, 2, None, "/tmp", "t2")
    store.delete_session("p")
    assert store.get_session("p") is None
    assert store.list_session_ids() == ["c"]
    assert ids(store, "c") == ["m0", "m1"]
    store.delete_session("c")
    assert store.get_session("p", include_deleted=True) is None, "garbage collected"


def test_inflight_stream_journal(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "db.sqlite")
    store.create_session("s", "/tmp", {}, "t0")
    store.begin_stream("s", "a1", {"turnId": "a1"})
    store.append_chunks("s", [("text", "Hel"), ("thought", "hm"), ("text", "lo")])
    [inflight] = store.inflight_streams()
    assert (inflight.text, inflight.thought, inflight.meta) == ("Hello", "hm", {"turnId": "a1"})
    store.append("s", [msg_event("a1")], "t1", end_stream=True)
    assert store.inflight_streams() == []


def test_corrupt_database_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="THREADLINE_HOME"):
        EventStore(path)


# -- many processes on one store -------------------------------------------------------


def other_owner(pid: int, host: str = "", started: float = 0.0) -> Owner:
    return Owner(id=f"owner-{pid}", pid=pid, host=host or hostname(), started=started)


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_append_at_an_expected_sequence_refuses_a_stale_writer(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "db.sqlite")
    store.create_session("s", "/tmp", {}, "t0")
    seq = store.append("s", [msg_event("m1")], "t1", expected_seq=0)
    assert seq == 1
    with pytest.raises(StoreConflict):
        store.append("s", [msg_event("m2")], "t2", expected_seq=0)
    assert ids(store, "s") == ["m1"]
    assert [e.seq for e in store.load_events("s", after_seq=0)] == [1]


def test_a_live_lease_is_refused_and_a_dead_one_taken_over(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "db.sqlite")
    store.create_session("s", "/tmp", {}, "t0")
    me = current_owner()
    alive = other_owner(os.getppid())
    got = store.acquire_lease("s", alive, "turn", "a1", time.time())
    assert got.mine and got.took_over is None
    refused = store.acquire_lease("s", me, "turn", "a2", time.time())
    assert not refused.mine and refused.lease.owner.id == alive.id
    assert refused.lease.turn_id == "a1"
    store.release_lease("s", alive)
    dead = other_owner(dead_pid())
    store.acquire_lease("s", dead, "turn", "a3", time.time())
    taken = store.acquire_lease("s", me, "turn", "a4", time.time())
    assert taken.mine and taken.took_over is not None and taken.took_over.owner.id == dead.id


def test_a_lease_on_another_host_is_taken_over_only_when_its_heartbeat_is_stale(
    tmp_path: Path,
) -> None:
    store = EventStore(tmp_path / "db.sqlite")
    store.create_session("s", "/tmp", {}, "t0")
    me = current_owner()
    remote = Owner(id="remote", pid=1, host="elsewhere.example", started=0.0)
    now = time.time()
    store.acquire_lease("s", remote, "turn", None, now)
    assert not store.acquire_lease("s", me, "turn", None, now + 1).mine
    assert store.acquire_lease("s", me, "turn", None, now + lease_ttl() + 1).mine


def test_heartbeat_carries_interrupt_requests_to_the_owner(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "db.sqlite")
    store.create_session("s", "/tmp", {}, "t0")
    me = current_owner()
    store.acquire_lease("s", me, "turn", "a1", time.time())
    assert store.heartbeat(me, time.time()) == []
    lease = store.request_interrupt("s")
    assert lease is not None and lease.owner.id == me.id
    assert store.heartbeat(me, time.time()) == ["s"]
    store.release_lease("s", me)
    assert store.get_lease("s") is None
    assert store.request_interrupt("s") is None


def test_delete_is_refused_while_another_live_process_holds_the_session(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "db.sqlite")
    store.create_session("s", "/tmp", {}, "t0")
    alive = other_owner(os.getppid())
    store.acquire_lease("s", alive, "turn", None, time.time())
    held = store.delete_session("s", current_owner(), time.time())
    assert held is not None and held.owner.id == alive.id
    assert store.get_session("s") is not None


def test_change_token_moves_when_another_connection_commits(tmp_path: Path) -> None:
    a = EventStore(tmp_path / "db.sqlite")
    b = EventStore(tmp_path / "db.sqlite")
    a.create_session("s", "/tmp", {}, "t0")
    before = a.change_token()
    a.append("s", [msg_event("m1")], "t1")
    assert a.change_token() == before, "own commits are already known"
    b.append("s", [msg_event("m2")], "t2")
    assert a.change_token() != before


def test_a_store_from_a_newer_threadline_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    EventStore(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer Threadline"):
        EventStore(path)


def test_postgres_sidecars_starting_at_once_create_the_schema_once(pg_url: str) -> None:
    import threading

    from threadline.store.postgres import PostgresStore

    opened: list[PostgresStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            opened.append(PostgresStore(pg_url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert not errors and len(opened) == 6
        opened[0].create_session("s", "/tmp", {}, "t0")
        assert all(store.get_session("s") is not None for store in opened)
    finally:
        for store in opened:
            store.close()
