"""Events from the generation thread to the event loop, without the thread waiting.

A blocking cross-thread call per token (``anyio.from_thread.run_sync``) makes the
generation thread wait until the event loop has run it, behind whatever the loop is
doing then (journaling and announcing the previous token): with py-spy ``--idle`` that
was 8.5 % of the generation thread's wall time, against 3.0 % for this handoff. Here
the thread appends to a queue and, only when the queue was empty (and, with a burst
interval, no wake went out that recently), writes one byte to a pipe the consumer
waits on; the consumer takes everything queued at once.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections import deque
from typing import Generic, TypeVar

import anyio

_T = TypeVar("_T")


class HandoffClosed(Exception):
    """The consumer is gone: the producing thread should stop."""


class Handoff(Generic[_T]):
    """One producer thread, one async consumer.

    With ``burst_seconds`` the producer wakes the consumer at most that often (the
    first item at once) and the consumer looks again after that long: items arrive in
    bursts, so the loop's work per burst (journal, announce) is not paid per token.
    """

    def __init__(self, burst_seconds: float = 0.0) -> None:
        self._burst = burst_seconds
        self._woke = -math.inf
        self._items: deque[_T] = deque()
        self._lock = threading.Lock()
        self._done = False
        """The producer has finished: what is queued is all there is."""
        self._abandoned = False
        """The consumer has gone: puts fail."""
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)

    # -- the producing thread ---------------------------------------------------------

    def put(self, item: _T) -> None:
        """Queue ``item`` and wake the consumer if it may be waiting; never blocks."""
        with self._lock:
            if self._abandoned:
                raise HandoffClosed
            if not self._items:
                now = time.monotonic()
                if now - self._woke >= self._burst:
                    self._woke = now
                    self._wake()
            self._items.append(item)

    def finish(self) -> None:
        """No more items: the consumer ends once it has taken what is queued."""
        with self._lock:
            self._done = True
            if not self._abandoned:
                self._wake()

    def _wake(self) -> None:
        """One byte for the consumer's wait. Called under the lock, so never after
        :meth:`abandon` closed the pipe (its number could already name another file)."""
        with contextlib.suppress(BlockingIOError):  # a full pipe wakes it already
            os.write(self._write_fd, b"\0")

    # -- the consumer -------------------------------------------------------------------

    async def take(self) -> list[_T] | None:
        """Everything queued (waiting for at least one item); None once finished and
        drained."""
        while True:
            with contextlib.suppress(BlockingIOError):
                while os.read(self._read_fd, 4096):
                    pass
            with self._lock:
                if self._items:
                    items = list(self._items)
                    self._items.clear()
                    return items
                if self._done:
                    return None
            if self._burst:
                with anyio.move_on_after(self._burst):
                    await anyio.wait_readable(self._read_fd)
            else:
                await anyio.wait_readable(self._read_fd)

    def abandon(self) -> None:
        """The consumer stops listening: later puts raise :class:`HandoffClosed`, and
        the pipe is closed."""
        with self._lock:
            if self._abandoned:
                return
            self._abandoned = True
            self._items.clear()
        os.close(self._read_fd)
        os.close(self._write_fd)
