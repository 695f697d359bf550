"""Bursts of every session streaming in this process, journaled together.

A streaming turn journals each burst of deltas before its client is shown it (so a
crash keeps what was shown, ``engine.recover``). One write per burst per session is
cheap on SQLite (in process) but a round trip to a PostgreSQL server, made on the
event loop: with many sessions streaming at once those round trips queue one behind
another (30 sessions × 40 bursts: 1,200 of them per sidecar). So a burst is queued
here, and every burst queued in the same turn of the event loop is written by one
call (`SessionStore.append_bursts`, one statement on PostgreSQL) on the loop's next
turn; each turn then shows its burst. What a crash keeps is unchanged: nothing is
shown before it is written.

Where each write is a round trip (`SessionStore.journal_window` > 0: PostgreSQL), a
write also waits until that long after the one before it, so that under load the
bursts of many loop turns share one (group commit): 30 sessions streaming in a sidecar
made ~120 journal writes a second each, every one a statement, a notification each
other sidecar wakes for, and a wait on the event loop. A burst with no write just
before it is written on the next loop turn as before; under load one waits at most
the window before it is shown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import anyio

from ..store.base import SessionStore

Runs = Sequence[tuple[str, str]]


class BurstJournal:
    def __init__(self, store: SessionStore) -> None:
        self._store = store
        self._queued: list[tuple[str, Runs]] = []
        self._written: asyncio.Future[None] | None = None
        """Resolved once the queued bursts are written (or failed to be)."""
        self._window = store.journal_window
        self._last = float("-inf")
        """When (the loop's clock) the last write began."""

    async def append(self, session_id: str, runs: Runs) -> None:
        """Queue one session's burst and wait until it is written (with the others
        queued meanwhile). Not cancelled half way: a burst written is then shown."""
        if not runs:
            return
        self._queued.append((session_id, runs))
        written = self._written
        if written is None:
            loop = asyncio.get_running_loop()
            written = self._written = loop.create_future()
            wait = self._last + self._window - loop.time()
            if wait > 0:
                loop.call_later(wait, self._write)
            else:
                loop.call_soon(self._write)
        with anyio.CancelScope(shield=True):
            await written

    def _write(self) -> None:
        queued, written = self._queued, self._written
        self._queued, self._written = [], None
        assert written is not None
        self._last = asyncio.get_running_loop().time()
        try:
            self._store.append_bursts(queued)
        except Exception as exc:  # each turn that waits fails with it, as it would alone
            written.set_exception(exc)
            return
        written.set_result(None)
