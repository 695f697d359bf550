"""The sessions this process holds live, kept fresh against a store others write too.

`LiveSessions` is the one owner of a session's life in this process: loading it (from
a kept fold when it can), the freshness check (one change token per request, then
the session's own events caught up), forgetting one another process deleted, the
leases its tasks hold (`leased`, `run`) and what a dead owner left unfinished
(`repair`), and unloading. The engine asks
it for a session (`open`) and to run a task on one; everything else here is
bookkeeping the protocol operations need not see.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, TypeVar

import anyio

from ..store.base import Acquired, SessionRow, SessionStore, StoreError
from ..store.owners import current_owner
from ..tools.delegate import Delegator
from . import events
from .bursts import BurstJournal
from .errors import SessionBusy, SessionNotFound, as_engine_error
from .folds import FoldCache, Project
from .link import ClientLink
from .mutations import Mutation, from_event
from .outcomes import Interrupted
from .ownership import LeaseKeeper, busy_error
from .session import Session
from .tasks import RunningTask, SessionTask, Work
from .transcript import Transcript
from .unfinished import CRASHED, FORKED, PartialAnswer, journaled_turn, unfinished
from .workspace import Workspaces

if TYPE_CHECKING:
    from ..providers.registry import ProviderRegistry

log = logging.getLogger(__name__)

R = TypeVar("R")

REMOTE_INTERRUPT_WAIT = 10.0
"""Seconds an interrupt waits for another process to end the turn."""


class LiveSessions:
    def __init__(
        self,
        store: SessionStore,
        providers: ProviderRegistry,
        link: ClientLink,
        workspaces: Workspaces | None = None,
    ) -> None:
        self.store = store
        self.workspaces = workspaces or Workspaces(None)
        self.providers = providers
        self.link = link
        self.sessions: dict[str, Session] = {}
        self.owner = current_owner()
        self.leases = LeaseKeeper(store, self.owner, self._interrupt_requested)
        self._token = store.change_token()
        self._generation = 0
        self._folds = FoldCache(store, replay=self._replay_projection)
        self._bursts = BurstJournal(store)
        self.delegator: Delegator | None = None
        """Runs child sessions for ``delegate`` calls (`children.Children`, set by the
        engine); every session loaded here gets the tool."""

    def _replay_projection(self) -> tuple[Project, object]:
        """How this client is shown a replay, for folds kept as sessions grow."""
        projection = self.link.projection
        return projection.replay, projection.variant

    # -- opening and freshness --------------------------------------------------------------

    def open(self, session_id: str) -> Session:
        """The session, loaded or caught up with what other processes committed."""
        session = self.sessions.get(session_id)
        if session is None:
            row = self.store.get_session(session_id)
            if row is None:
                self._folds.drop(session_id)
                raise SessionNotFound(session_id)
            return self.load(row)
        self.sync(session)
        if (
            session.running is None
            and _mid_turn(session.transcript)
            and self.leases.live_holder(session.id) is None
            and (
                session.transcript.open_calls or self.store.inflight_stream(session.id) is not None
            )
        ):
            # A turn another sidecar ran stopped mid-way in what we hold, and that
            # sidecar is gone (dying writes nothing): what it left is ours to record.
            self.repair(session)
        return session

    def load(self, row: SessionRow) -> Session:
        """Hold the session of ``row``, repairing what a dead process left unfinished.
        Its stream journal is read only when the row says there was one (`SessionRow.
        streaming`, read with it): a turn begun since the row was read is a live
        owner's, which the repair leaves alone anyway."""
        transcript, seq = self._folds.open(row)  # kept, or folded from the log
        session = self._held(row, transcript, seq)
        if transcript.open_calls or (
            row.streaming is not False and self.store.inflight_stream(row.id) is not None
        ):
            self.repair(session)
        return session

    def open_fork(self, session_id: str, base: Transcript | None) -> Session:
        """A fork made just now: adopted with ``base`` (its parent's transcript copied
        at the fork, `forking.fork_with_base`) when there is one, else opened."""
        row = None if base is None else self.store.get_session(session_id)
        if row is None or base is None:
            return self.open(session_id)
        return self.adopt(row, base)

    def adopt(self, row: SessionRow, base: Transcript) -> Session:
        """A fork made just now of a session held here, its transcript copied from the
        parent's in memory (``base``, as of the fork point) and its own events applied,
        instead of folding the parent's whole log again from the store."""
        seq = 0
        for e in self.store.load_events(row.id, after_seq=0):
            base.apply(from_event(e.kind, e.payload))
            seq = e.seq
        return self._held(row, base, seq)

    def _held(self, row: SessionRow, transcript: Transcript, seq: int) -> Session:
        """The live session of ``row``, held here from now on."""
        session = Session(
            row,
            transcript,
            self.store,
            self.providers,
            self.link,
            seq,
            self.workspaces,
            self._bursts,
            self.delegator,
        )
        session.checked = self._generation
        session.checked_token = self._token
        session.on_awaiting = self._say_awaiting
        self.sessions[row.id] = session
        return session

    def _say_awaiting(self, session: Session, awaiting: bool) -> None:
        """Other processes' windows show ``requires_action`` from our lease; a store
        that fails here costs them that, never the turn."""
        if session.id not in self.leases.held:
            return
        try:
            self.store.mark_awaiting(session.id, self.owner, awaiting)
        except StoreError as exc:
            log.warning("could not say that %s waits for its user: %s", session.id, exc)

    def sync(self, session: Session) -> Session:
        """Fold in what other processes committed; one cheap look when nothing did, and
        none of the session's row when the changes heard since it was current name
        other sessions only (a team store where other sidecars stream all the time)."""
        token = self.store.change_token()
        if token != self._token:
            self._token = token
            self._generation += 1
        if session.checked == self._generation:
            return session
        changed = self.store.changed_since(session.checked_token)
        if changed is not None and session.id not in changed:
            session.checked, session.checked_token = self._generation, token
            return session
        row = self.store.get_session(session.id)
        if row is None:
            self.forget(session)
            raise SessionNotFound(session.id)
        if row.last_seq != session.seq:
            session.catch_up(self.store.load_events(session.id, after_seq=session.seq), row)
        else:
            session.catch_up([], row)
        session.checked, session.checked_token = self._generation, token
        return session

    def forget(self, session: Session) -> None:
        """Drop a session another process deleted."""
        self.sessions.pop(session.id, None)
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(session.close_tools())

    # -- what an unfinished turn left ---------------------------------------------------

    def _record_unfinished(self, session: Session, journaled: bool) -> None:
        """Under the lease, once caught up: store what a turn that stopped without
        finishing left (a journaled answer, calls without a result): a dead owner's,
        or ours from a turn whose last record could not be written (a full disk).
        ``journaled``: whether the lease found a stream journal (without one, none can
        appear while we hold the lease: no read)."""
        transcript = session.transcript
        inflight = self.store.inflight_stream(session.id) if journaled else None
        if inflight is not None:
            answer = PartialAnswer.journaled(inflight, transcript)
            turn_id = journaled_turn(inflight, transcript)
            left = unfinished(transcript, CRASHED, answer=answer, turn_id=turn_id)
            if left:
                session.commit(left, end_stream=True)
            else:
                self.store.clear_stream(session.id)
        if transcript.open_calls:
            session.commit(unfinished(transcript, CRASHED))

    def repair(self, session: Session) -> None:
        """Record what a dead process left unfinished, under a repair lease. Never
        touches a live process's turn: it holds the lease, and the repair is skipped."""
        if session.running is not None or session.id in self.leases.held:
            return
        try:
            got = self._acquire(session, Work.REPAIR)
        except SessionBusy:
            return
        try:
            self.sync(session)
            self._record_unfinished(session, got.journaled)
        finally:
            self.leases.release(session.id)

    def recover(self) -> int:
        """Turn answers cut off by a crash into truncated messages; returns how many.
        Streams whose owner is alive (another sidecar on this home) are left alone."""
        recovered = 0
        for inflight in self.store.inflight_streams():
            sid = inflight.session_id
            loaded_here = sid not in self.sessions
            try:
                session = self.sessions.get(sid)
                if session is None:
                    session = self.open(sid)  # loading repairs what a dead owner left
                else:
                    self.repair(session)
            except SessionNotFound:
                self.store.clear_stream(sid)  # the journal of a deleted session
                continue
            except Exception:
                log.exception("could not recover the interrupted turn of %s", sid)
                continue
            if self.store.inflight_stream(sid) is None:
                recovered += 1
            elif loaded_here:
                # A live owner's turn: not ours to keep loaded, or a read after that
                # owner dies would not load (and so repair) it again.
                self.sessions.pop(sid, None)
        return recovered

    def snapshot(self, session: Session) -> list[Mutation]:
        """What the turn running on ``session`` would leave if stopped now, for a fork:
        ours from the task itself, another process's from its journal."""
        running = session.running
        if running is not None:
            return running.task.snapshot()
        if self.leases.live_holder(session.id) is None:
            return []
        transcript = session.transcript
        inflight = self.store.inflight_stream(session.id)
        answer = None if inflight is None else PartialAnswer.journaled(inflight, transcript)
        return unfinished(transcript, FORKED, answer=answer, copy=True)

    # -- leases and tasks -----------------------------------------------------------------

    @contextlib.contextmanager
    def leased(self, session: Session, work: Work, turn_id: str | None = None) -> Generator[None]:
        """Hold the session's lease around work that writes to it, the session caught
        up and whatever a turn left unfinished recorded first."""
        session.check_idle(work.action)
        got = self._acquire(session, work, turn_id)
        try:
            self.sync(session)
            self._record_unfinished(session, got.journaled)
            yield
        finally:
            self.leases.release(session.id)
            # A sub-agent's fold is its parent's plus a turn: written after each of its
            # turns, every delegate of a long session would write the parent's whole
            # fold again (77 MB at 100,000 messages, assembled on threads that starve
            # the loop). Kept at shutdown (`aclose`) instead, like any session held.
            if session.config.child is None:
                self._folds.grown(session.id, session.transcript, session.seq)

    def _acquire(self, session: Session, work: Work, turn_id: str | None = None) -> Acquired:
        """Take the lease; prompts that waited on work whose process died are held, not
        run: after a crash they run only when the user says so (``session/queue/resume``)."""
        got = self.leases.acquire(session.id, work, turn_id)
        if got.took_over is not None and self.store.hold_pending(session.id):
            session.changed(session)
        return got

    async def run(self, session: Session, task: SessionTask[R]) -> R:
        """Run a task on the session: under its lease as the session's one task, or,
        for one that holds none, beside whatever runs."""
        work = task.work
        if work is None:
            return await task.run()
        with self.leased(session, work, task.lease_turn_id):
            return await self.run_leased(session, task)

    async def run_leased(self, session: Session, task: SessionTask[R]) -> R:
        """Run a task as the session's one task, its lease already held (`leased`);
        every window is told it started and ended (`Session.changed`)."""
        running = RunningTask(task)
        session.running = running
        session.changed(session)
        try:
            result = await running.run()
        except BaseException as exc:
            session.announce(work_ended(exc))
            raise
        else:
            stop = getattr(result, "stop_reason", None)
            session.announce(events.WorkEnded(stop if isinstance(stop, str) else "end_turn"))
            return result
        finally:
            session.running = None
            session.changed(session)

    def _interrupt_requested(self, session_id: str) -> None:
        """Another process asked (through the store) to stop a turn we run."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.changed(session)  # what other windows did is shown before the stop
            session.request_interrupt()

    async def interrupt(self, session: Session) -> Interrupted:
        """Stop the session's turn, here or in the process that runs it."""
        if session.interruptible() is not None:
            return await session.interrupt()
        lease = self.leases.live_holder(session.id)
        if lease is None or lease.kind != Work.TURN:
            return Interrupted(False)
        self.store.request_interrupt(session.id)
        # The owner sees the request at its next heartbeat and records what was left.
        with anyio.move_on_after(REMOTE_INTERRUPT_WAIT):
            while True:
                now = self.store.get_lease(session.id)
                if now is None or now.owner.id != lease.owner.id or now.since != lease.since:
                    break
                await anyio.sleep(0.02)
        self.sync(session)
        return Interrupted(True, lease.turn_id)

    def cancel(self, session_id: str) -> None:
        """Ask the turn to stop, without waiting (``session/cancel``)."""
        session = self.sessions.get(session_id)
        if session is not None and session.interruptible() is not None:
            session.request_interrupt()
            return
        lease = self.leases.live_holder(session_id)
        if lease is not None and lease.kind == Work.TURN:
            self.store.request_interrupt(session_id)

    # -- unloading ----------------------------------------------------------------

    async def close(self, session: Session) -> None:
        """Unload: stop its turn and tools, keep its fold for a later open."""
        await session.interrupt()
        await session.close_tools()
        if self.sessions.pop(session.id, None) is session:
            self._folds.put(session.id, session.transcript, session.seq)

    async def delete(self, session_id: str) -> None:
        """Delete a session no process is working on (`SessionBusy` otherwise)."""
        session = self.sessions.get(session_id)
        if session is None and self.store.get_session(session_id) is None:
            raise SessionNotFound(session_id)
        self.leases.check_free(session_id)
        self._folds.drop(session_id)
        if session is not None:
            await session.interrupt()
        held = self.store.delete_session(session_id, self.owner, time.time())
        if held is not None:
            raise busy_error(session_id, held)
        if session is not None:
            self.sessions.pop(session_id, None)
            await session.close_tools()

    async def aclose(self) -> None:
        """Interrupt every running turn so its partial state is recorded, then stop."""
        running = [s for s in self.sessions.values() if s.running is not None]
        if running:
            async with anyio.create_task_group() as tg:
                for s in running:
                    tg.start_soon(s.interrupt)
        async with anyio.create_task_group() as tg:
            for s in self.sessions.values():
                tg.start_soon(s.close_tools)
        await self._folds.flush((s.id, s.transcript, s.seq) for s in self.sessions.values())
        await self.leases.aclose()


def _mid_turn(transcript: Transcript) -> bool:
    """Whether the transcript stops inside a turn: a call without its result, or a
    prompt or tool result that no answer follows yet."""
    if transcript.open_calls:
        return True
    last = transcript.messages[-1] if transcript.messages else None
    return last is not None and last["role"] in ("user", "tool")


def work_ended(exc: BaseException) -> events.WorkEnded:
    """How work that raised ended: cancelled (its request withdrawn, the process
    stopping), or failed with the error its request answers."""
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return events.WorkEnded("cancelled")
    err = as_engine_error(exc)
    if err is None:
        return events.WorkEnded(None, (-32603, str(exc) or type(exc).__name__))
    return events.WorkEnded(None, (int(err.code), err.message))
