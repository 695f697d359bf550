"""Bursts of many sessions journaled together (``engine/bursts.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from threadline.engine.bursts import BurstJournal
from threadline.store.base import StoreError
from threadline.store.sqlite import EventStore


class CountingStore(EventStore):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writes: list[list[str]] = []
        self.fail = False

    def append_bursts(self, bursts: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> None:
        self.writes.append([sid for sid, _ in bursts])
        if self.fail:
            raise StoreError("refused")
        super().append_bursts(bursts)


async def test_bursts_of_the_same_moment_are_one_write_each_waiting_for_it(
    tmp_path: Path,
) -> None:
    store = CountingStore(tmp_path / "threadline.db")
    try:
        for sid in ("a", "b", "c"):
            store.create_session(sid, "/tmp", {}, "t0")
            store.begin_stream(sid, f"m-{sid}", {"turnId": "a1"})
        journal = BurstJournal(store)
        seen: list[str] = []

        async def turn(sid: str, text: str) -> None:
            await journal.append(sid, [("text", text)])
            # written before the turn goes on (to show it)
            tail = store.stream_since(sid, 0)
            seen.append("".join(text for _, _, text in tail.chunks))

        await asyncio.gather(turn("a", "one "), turn("b", "two "), turn("c", "three "))
        assert store.writes == [["a", "b", "c"]]
        assert sorted(seen) == ["one ", "three ", "two "]
        await turn("a", "more")  # a later moment: a write of its own
        assert store.writes[1:] == [["a"]] and seen[-1] == "one more"
        store.fail = True
        with pytest.raises(StoreError):  # each waiting turn fails as it would alone
            await asyncio.gather(turn("b", "x"), turn("c", "y"))
    finally:
        store.close()


async def test_with_a_window_bursts_of_nearby_moments_share_a_write(tmp_path: Path) -> None:
    """Where each write is a round trip (`SessionStore.journal_window`), bursts that
    come within the window after a write wait for the next one together (group
    commit); a burst with no write before it is not held back."""
    store = CountingStore(tmp_path / "threadline.db")
    store.journal_window = 1.0
    try:
        for sid in ("a", "b", "c"):
            store.create_session(sid, "/tmp", {}, "t0")
            store.begin_stream(sid, f"m-{sid}", {"turnId": "a1"})
        journal = BurstJournal(store)
        await journal.append("a", [("text", "first")])  # nothing before it: at once
        assert store.writes == [["a"]]

        async def later(sid: str, turns: int) -> None:
            for _ in range(turns):
                await asyncio.sleep(0)
            await journal.append(sid, [("text", sid)])

        # two other moments of the loop, within the window of the first write
        await asyncio.gather(later("b", 0), later("c", 3))
        assert store.writes == [["a"], ["b", "c"]]
        for sid in ("b", "c"):  # and each was written before its turn went on
            assert [t for _, _, t in store.stream_since(sid, 0).chunks] == [sid]
    finally:
        store.close()
