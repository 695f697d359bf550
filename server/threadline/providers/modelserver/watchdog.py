"""Liveness of a model server while one of our requests is in flight.

Progress is either bytes from the server (the stream's events, noted by the caller)
or CPU time advancing in ``/proc/<pid>/stat`` (a long prefill, or a non-streamed
completion, sends nothing for a while but burns CPU). With neither for
``stall_timeout`` seconds the server is stuck (deadlocked, swapped out, stopped), and
the watchdog kills it with ``SIGKILL``: the stream then fails at once, and the keeper
starts a fresh server. A thread, not a task: it must act while the event loop's task
is blocked waiting for the very bytes that do not come, and it needs no cancel scope
around a generator's ``yield``.
"""

from __future__ import annotations

import threading
import time

from . import procfs


class Watchdog:
    def __init__(self, pid: int, start: int | None, stall_timeout: float) -> None:
        self.pid = pid
        self.start_ticks = start
        self.stall_timeout = stall_timeout
        self.poll = max(0.05, min(1.0, stall_timeout / 5))
        self.last_progress = time.monotonic()
        self.stalled_for: float | None = None
        """Set when the watchdog killed the server: the silence it saw, in seconds."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watchdog-{pid}", daemon=True)

    def __enter__(self) -> Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def progress(self) -> None:
        """Bytes arrived (called from the event loop; a float store is atomic)."""
        self.last_progress = time.monotonic()

    def _run(self) -> None:
        cpu = procfs.cpu_ticks(self.pid, self.start_ticks)
        while not self._stop.wait(self.poll):
            now_cpu = procfs.cpu_ticks(self.pid, self.start_ticks)
            if now_cpu is None:
                return  # gone: the stream fails by itself
            now = time.monotonic()
            if now_cpu != cpu:
                cpu = now_cpu
                self.last_progress = now
            elif now - self.last_progress > self.stall_timeout:
                self.stalled_for = now - self.last_progress
                procfs.kill(self.pid, self.start_ticks)
                return
