from __future__ import annotations

from pathlib import Path

import pytest

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
    assert [r.id for r in store.list_sessions()] == ["c"]
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
