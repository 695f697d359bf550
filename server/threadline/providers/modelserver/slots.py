"""Slots and a fair queue across processes, with lock files in the server's folder.

A request holds one of N slot files (``slots/<i>``, ``flock``-ed) while it is in flight.
One that finds none free takes a ticket (a counter under the record lock) and waits in
``queue/``: its ticket file, locked by it, says it waits. Tickets are served in order:
a waiter may take a slot only when fewer waiters are ahead of it than slots are free,
so a newcomer never overtakes. A ticket whose lock can be taken belongs to a process
that died; it is swept. Waiting polls (no blocking ``flock`` call), so cancelling it,
which is what an interrupt does, ends the wait at once and withdraws the ticket.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import AsyncIterator

import anyio

from .home import ServerHome, try_flock

POLL = 0.05
TICKET_DIGITS = 12


class NoSlot(Exception):
    """No slot came free within the configured wait."""


class Slot:
    """A held slot; ``release`` (or process death) gives it back."""

    def __init__(self, home: ServerHome, index: int, fd: int) -> None:
        self.home = home
        self.index = index
        self._fd: int | None = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
            with contextlib.suppress(OSError):
                self.home.touch_used()


class SlotQueue:
    def __init__(self, home: ServerHome, slots: int) -> None:
        self.home = home
        self.slots = slots
        self.slot: Slot | None = None

    def try_take(self) -> Slot | None:
        for i in range(self.slots):
            fd = os.open(self.home.slot_path(i), os.O_RDWR | os.O_CREAT, 0o600)
            if try_flock(fd):
                return Slot(self.home, i, fd)
            os.close(fd)
        return None

    async def wait(self, max_wait: float) -> AsyncIterator[str]:
        """Take a slot (then ``self.slot`` holds it), yielding a status line whenever the
        queue ahead changes; :class:`NoSlot` after ``max_wait`` seconds."""
        self.home.create()
        if not self._queued():
            self.slot = self.try_take()
            if self.slot is not None:
                return
        ticket, fd = await self._enter()
        try:
            deadline = time.monotonic() + max_wait
            said: tuple[int, int] | None = None
            while True:
                ahead = self._ahead(ticket)
                busy = self.home.slots_busy(self.slots)
                if ahead < self.slots - busy:
                    self.slot = self.try_take()
                    if self.slot is not None:
                        return
                if (ahead, busy) != said and ahead + busy:
                    said = (ahead, busy)
                    yield (
                        f"waiting for the model: {ahead + busy} ahead "
                        f"({busy} of {self.slots} slot{'s' if self.slots != 1 else ''} busy)"
                    )
                if time.monotonic() > deadline:
                    raise NoSlot(
                        f"no free slot on the model server after {max_wait:g} s "
                        f"({busy} of {self.slots} busy, {ahead} waiting ahead)"
                    )
                await anyio.sleep(POLL)
        finally:
            path = self.home.queue_dir / ticket
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            os.close(fd)

    def _queued(self) -> bool:
        """Whether anyone waits (then a newcomer queues too, behind them)."""
        return any(self._live(name) for name in self._tickets())

    async def _enter(self) -> tuple[str, int]:
        async with self.home.alock():
            counter = self.home.queue_dir / "next"
            try:
                n = int(counter.read_text() or 0)
            except (FileNotFoundError, ValueError):
                n = 0
            counter.write_text(str(n + 1))
            name = f"{n:0{TICKET_DIGITS}d}"
            # Locked before it appears under its name: never seen unlocked (and swept).
            tmp = self.home.queue_dir / f".{name}.{os.getpid()}"
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.replace(tmp, self.home.queue_dir / name)
        return name, fd

    def _tickets(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.home.queue_dir) if n.isdigit())
        except FileNotFoundError:
            return []

    def _live(self, name: str) -> bool:
        """Whether the ticket's owner still waits (a dead owner's ticket is swept)."""
        try:
            fd = os.open(self.home.queue_dir / name, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            if try_flock(fd, fcntl.LOCK_SH):
                with contextlib.suppress(FileNotFoundError):
                    (self.home.queue_dir / name).unlink()
                return False
            return True
        finally:
            os.close(fd)

    def _ahead(self, ticket: str) -> int:
        return sum(1 for name in self._tickets() if name < ticket and self._live(name))
