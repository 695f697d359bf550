"""The work a session does, as tasks of one kind: a turn, a compaction, a command.

Each task names the lease it holds (`Work`: one kind each, the same names the store
keeps on a lease), runs once, and is stopped one way: `RunningTask.cancel` cancels
the scope it runs in; the task records what it leaves as it unwinds (a turn its
truncated answer and cancelled calls, a compaction nothing) and `cancelled` is then
its result. `Session.run` runs one task at a time; `LiveSessions.run` holds the
task's lease around it. A repair holds a lease of its own kind (`Work.REPAIR`) but
runs synchronously, on the paths that read a session (`LiveSessions.repair`).

Two seams for what comes next: a turn asks for input that joined it between model
calls (`Turn._between_calls`), and a session starts the next queued task where one
ends (`Session.run`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Generic, Protocol, TypeVar

import anyio

from . import events
from .mutations import Mutation

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class Work(StrEnum):
    """The kind of lease a task holds while it writes to a session."""

    TURN = "turn"
    COMPACT = "compact"
    REPAIR = "repair"
    REWIND = "rewind"
    """A rewind, an unrewind or a restore of files (``engine/rewind.py``)."""

    @property
    def action(self) -> str:
        """What is refused, in "cannot … now", while another task runs."""
        return "prompt" if self is Work.TURN else self.value

    @property
    def state(self) -> str:
        """The session's state while a task of this kind runs."""
        return {Work.TURN: "running", Work.COMPACT: "compacting", Work.REWIND: "rewinding"}.get(
            self, "repairing"
        )

    @property
    def interruptible(self) -> bool:
        """Whether ``session/interrupt`` and ``session/cancel`` stop it."""
        return self is Work.TURN


class SessionTask(Protocol[R_co]):
    @property
    def work(self) -> Work | None:
        """The lease it holds; None: it only reads the session (a fork writes a new
        one) and runs beside whatever runs."""
        ...

    @property
    def turn_id(self) -> str | None:
        """The turn it runs in (an interrupt answers with it)."""
        ...

    @property
    def lease_turn_id(self) -> str | None:
        """The turn the lease names (another process's interrupt answers with it)."""
        ...

    async def run(self) -> R_co: ...

    def cancelled(self) -> R_co:
        """The result once stopped by `RunningTask.cancel` (what it left is recorded)."""
        ...

    def snapshot(self) -> list[Mutation]:
        """What it would leave if stopped now, for a fork to record."""
        ...

    def streaming(self) -> events.MessageChunk | None:
        """The answer streamed so far and not yet stored, as one chunk: what a client
        that starts watching mid-way is shown first (later chunks reach it anyway)."""
        ...


class RunningTask(Generic[R]):
    """A task started: the one way it is stopped, and when it is done."""

    def __init__(self, task: SessionTask[R]) -> None:
        self.task = task
        self.scope: anyio.CancelScope | None = None
        self.done = anyio.Event()

    @property
    def work(self) -> Work | None:
        return self.task.work

    async def run(self) -> R:
        try:
            with anyio.CancelScope() as scope:
                self.scope = scope
                return await self.task.run()
            return self.task.cancelled()
        finally:
            self.done.set()

    def cancel(self) -> bool:
        """Stop the task; False when it has not started."""
        if self.scope is None:
            return False
        self.scope.cancel()
        return True
