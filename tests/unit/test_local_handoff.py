"""The local provider's handoff: a generation thread never waits for the event loop,
and nothing it queues is lost, reordered, or written after the consumer has gone."""

from __future__ import annotations

import threading

import anyio
import pytest

from threadline.providers.local.handoff import Handoff, HandoffClosed


async def test_a_thread_hands_over_every_item_in_order_then_the_end() -> None:
    handoff = Handoff[int]()

    def produce() -> None:
        for i in range(5000):
            handoff.put(i)
        handoff.finish()

    thread = threading.Thread(target=produce)
    thread.start()
    got: list[int] = []
    batches = 0
    with anyio.fail_after(20):
        while (items := await handoff.take()) is not None:
            got += items
            batches += 1
    thread.join()
    handoff.abandon()
    assert got == list(range(5000))
    assert 1 <= batches <= 5000


async def test_take_waits_for_a_put_from_a_thread() -> None:
    handoff = Handoff[str]()
    timer = threading.Timer(0.2, handoff.put, ("late",))
    timer.start()
    with anyio.fail_after(5):
        assert await handoff.take() == ["late"]
    handoff.finish()
    assert await handoff.take() is None
    handoff.abandon()


def test_puts_after_the_consumer_abandoned_fail_and_write_nothing() -> None:
    handoff = Handoff[int]()
    handoff.put(1)
    handoff.abandon()
    handoff.abandon()  # twice is harmless: the pipe is closed once
    with pytest.raises(HandoffClosed):
        handoff.put(2)
    handoff.finish()  # the producer's own ending never touches the closed pipe


async def test_with_a_burst_interval_an_item_put_without_a_wake_still_arrives() -> None:
    handoff = Handoff[int](burst_seconds=0.05)
    handoff.put(1)  # wakes at once
    assert await handoff.take() == [1]
    handoff.put(2)  # within the interval: no wake; the consumer looks again after it
    with anyio.fail_after(2):
        assert await handoff.take() == [2]
    handoff.finish()
    assert await handoff.take() is None
    handoff.abandon()
