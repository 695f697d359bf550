from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from threadline.engine.folds import STORE_AFTER, FoldCache
from threadline.engine.mutations import AssistantMessage, UserMessage
from threadline.store.base import SessionRow
from threadline.store.sqlite import EventStore


def _message(i: int) -> UserMessage | AssistantMessage:
    role = "user" if i % 2 == 0 else "assistant"
    turn = f"{role[0]}{i // 2 + 1}"
    msg = {"messageId": f"m{i}", "turnId": turn, "role": role, "content": [], "createdAt": ""}
    msg["content"] = [{"type": "text", "text": f"message {i} \u00e9"}]
    return UserMessage(msg) if role == "user" else AssistantMessage(msg)


def long_session(tmp_path: Path) -> tuple[EventStore, SessionRow, int]:
    """A store with one session just long enough for its fold to be kept."""
    store = EventStore(tmp_path / "db.sqlite")
    store.create_session("s", "/tmp", {}, "t0")
    n = STORE_AFTER + 10
    store.append("s", [_message(i).to_event() for i in range(n)], "t1")
    row = store.get_session("s")
    assert row is not None
    return store, row, n


def test_a_long_fold_is_kept_in_the_store_and_a_new_process_catches_up_from_it(
    tmp_path: Path,
) -> None:
    store, row, n = long_session(tmp_path)
    try:
        first, seq = FoldCache(store).open(row)  # no event loop: written at once
        assert seq == n and store.load_fold("s") is not None
        # another process: restored from the store, then the events after it folded in
        store.append("s", [_message(n).to_event(), _message(n + 1).to_event()], "t2")
        row = store.get_session("s")
        assert row is not None
        again, seq = FoldCache(store).open(row)
        assert seq == n + 2 and len(again) == n + 2
        assert again.history()[:n] == first.history()
        assert [m["messageId"] for m in again.history()[n:]] == [f"m{n}", f"m{n + 1}"]
        assert again.turn_number == first.turn_number + 1 == n // 2 + 1
        assert list(again.index) == [f"m{i}" for i in range(n + 2)]
    finally:
        store.close()


def test_a_short_fold_is_not_written(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "db.sqlite")
    try:
        store.create_session("s", "/tmp", {}, "t0")
        store.append("s", [_message(i).to_event() for i in range(10)], "t1")
        row = store.get_session("s")
        assert row is not None
        FoldCache(store).open(row)
        assert store.load_fold("s") is None
    finally:
        store.close()


async def test_under_an_event_loop_the_fold_is_written_on_a_worker_thread(
    tmp_path: Path,
) -> None:
    """The answer goes first; the fold is written off the loop, on a connection of its
    own, while the loop's connection goes on committing."""
    store, row, n = long_session(tmp_path)
    try:
        cache = FoldCache(store)
        written: list[str] = []
        save = store.save_fold

        def on_a_thread(
            session_id: str, seq: int, data: bytes, replay: bytes | None = None
        ) -> None:
            written.append(threading.current_thread().name)
            save(session_id, seq, data, replay)

        store.save_fold = on_a_thread  # type: ignore[method-assign]
        _, seq = cache.open(row)
        assert store.load_fold("s") is None  # not before the loop's next turn
        store.append("s", [_message(n).to_event()], "t2")  # the loop's own commits go on
        kept = None
        for _ in range(200):
            kept = store.load_fold("s")
            if kept is not None:
                break
            await asyncio.sleep(0.01)
        assert kept is not None and kept[0] == seq
        assert written and written[0] != threading.current_thread().name
    finally:
        store.close()
