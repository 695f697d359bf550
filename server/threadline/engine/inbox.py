"""Prompts that come while a session works: steering the running turn, or the queue.

A ``session/prompt`` to a session that is working (here, or in another window's
sidecar) does what its ``whileRunning`` says (or the client's default):

- ``steer``: stored at once (`store.pending`), shown in every window as the user's
  message, and taken by the running turn before its next model call
  (`Turn._between_calls`, through `Session.take_steering`): after the current tool
  batch, never inside a tool result. Its request answers when that turn ends, with
  the turn's stop reason.
- ``queue``: stored at once, shown in every window as queued, run as the next turn
  when the current work ends (`drain`), in order. Its request answers when its own
  turn ends.
- ``refuse``: -32010, as before.

Whichever process holds the session's lease when its work ends runs what waits next
(steering that came too late to join, then the queue), so a prompt queued in one
window runs in the window that was working; the one that queued it learns the outcome
from the store. Work that ends cancelled or failed holds what waits (it runs on
``session/queue/resume``), and so does a takeover of a dead process's lease
(`LiveSessions._acquire`): after a crash nothing runs until the user says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio

from threadline_protocol.errors import ErrorCode

from ..providers.base import Usage
from ..store.base import PendingPrompt
from . import events
from .commands import Fork, prompt_task, slash_command
from .errors import EngineError, InvalidParams, SessionBusy, as_engine_error
from .feed import Feed
from .ids import new_id, now_iso
from .live import LiveSessions
from .outcomes import CommandOutcome, NotRun, PromptOutcome, TurnOutcome
from .session import Session
from .tasks import SessionTask, Work
from .turn import Turn

log = logging.getLogger(__name__)

LOOK_SECONDS = 0.5
"""A waiting request looks at its prompt at least this often (a change in another
process wakes it sooner, through the feed)."""

MODES = ("steer", "queue", "refuse")

UNATTENDED_SECONDS = 5.0
"""Only for a store that cannot say whether a sender lives (a PostgreSQL role not
granted its owners table): how long a prompt may wait in a session that no process
works on before it is held. Elsewhere a prompt is held only once its sender is proven
dead (`LeaseKeeper.sender_gone`), however long a live but slow sender takes."""

Stored = Callable[[str | None], None]
"""Told that a prompt was accepted: the message id it is stored or waits under."""


def outcome_json(outcome: PromptOutcome) -> dict[str, Any]:
    """How a prompt's work ended, as its pending row keeps it for whoever waits."""
    if isinstance(outcome, CommandOutcome):
        return {"command": outcome.command}
    u = outcome.usage
    return {
        "stopReason": outcome.stop_reason,
        "usage": [u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens],
        "turnId": outcome.turn_id,
        "messageId": outcome.message_id,
        "toolOffers": outcome.tool_offers,
    }


def error_json(exc: BaseException) -> dict[str, Any]:
    err = as_engine_error(exc)
    if err is None:
        return {"error": {"code": int(ErrorCode.INTERNAL_ERROR), "message": str(exc)}}
    return {"error": {"code": int(err.code), "message": err.message, "data": err.data}}


class RemoteFailure(EngineError):
    """The turn a prompt joined (or started) failed, in whichever process ran it."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None) -> None:
        super().__init__(message, data)
        try:
            self.code = ErrorCode(code)
        except ValueError:
            self.code = ErrorCode.INTERNAL_ERROR


def outcome_of(prompt: PendingPrompt) -> PromptOutcome:
    """A finished prompt's outcome (raises the failure of the turn it was part of)."""
    done = prompt.outcome or {}
    if "error" in done:
        err = done["error"]
        raise RemoteFailure(int(err.get("code", 0)), str(err.get("message")), err.get("data"))
    if "command" in done:
        return CommandOutcome(str(done["command"]))
    return TurnOutcome(
        stop_reason=str(done.get("stopReason", "end_turn")),
        usage=Usage(*done.get("usage", [0, 0, 0, 0])),
        turn_id=str(done.get("turnId") or prompt.turn_id or ""),
        message_id=done.get("messageId"),
        user_message_id=prompt.id,
        tool_offers=list(done.get("toolOffers") or []),
    )


class Tracked:
    """A prompt's task, recording how it ended on the pending prompts it carries (its
    own, when it came from the queue, and the steering that joined it), and holding
    what still waits when it ends cancelled or failed."""

    def __init__(
        self,
        task: SessionTask[PromptOutcome],
        session: Session,
        own: str | None = None,
        *,
        accepted: Callable[[Session], None] | None = None,
        stored: Stored | None = None,
    ) -> None:
        self.task = task
        self.session = session
        self.own = own
        self.accepted = accepted
        self.stored = stored
        self.started = False
        self.ended_well = False
        self._finished = False

    @property
    def work(self) -> Work | None:
        return self.task.work

    @property
    def turn_id(self) -> str | None:
        return self.task.turn_id

    @property
    def lease_turn_id(self) -> str | None:
        return self.task.lease_turn_id

    def snapshot(self) -> list[Any]:
        return self.task.snapshot()

    def streaming(self) -> events.MessageChunk | None:
        return self.task.streaming()

    async def run(self) -> PromptOutcome:
        self.started = True
        if self.accepted is not None:
            self.accepted(self.session)
        if self.stored is not None:
            if isinstance(self.task, Turn):
                self.task.on_stored = self.stored  # once its prompt is stored
            else:
                self.stored(None)  # a command: accepted as it starts
        try:
            outcome = await self.task.run()
        except anyio.get_cancelled_exc_class():
            self._finish(outcome_json(self.task.cancelled()), hold=True)
            raise
        except BaseException as exc:
            self._finish(error_json(exc), hold=True)
            raise
        stopped = isinstance(outcome, TurnOutcome) and outcome.stop_reason == "cancelled"
        self._finish(outcome_json(outcome), hold=stopped)
        self.ended_well = not stopped
        return outcome

    def cancelled(self) -> PromptOutcome:
        outcome = self.task.cancelled()
        self._finish(outcome_json(outcome), hold=True)
        return outcome

    def _finish(self, outcome: dict[str, Any], *, hold: bool) -> None:
        if self._finished:
            return
        self._finished = True
        ids = list(self.task.joined) if isinstance(self.task, Turn) else []
        if self.own is not None:
            ids.insert(0, self.own)
        store = self.session.store
        try:
            store.finish_pending(ids, outcome)
            if hold:
                store.hold_pending(self.session.id)
        except Exception:
            log.exception("could not record how the prompts of %s ended", self.session.id)


class Inbox:
    def __init__(self, live: LiveSessions, feed: Feed, fork: Fork) -> None:
        self.live = live
        self.store = live.store
        self.feed = feed
        self.fork = fork
        self._draining: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._unattended: dict[str, float] = {}
        feed.unattended = self._hold_unattended

    # -- a prompt ----------------------------------------------------------------------

    async def prompt(
        self,
        session: Session,
        content: list[dict[str, Any]],
        mode: str,
        *,
        accepted: Callable[[Session], None],
        stored: Stored | None = None,
        show: bool = False,
    ) -> PromptOutcome | NotRun:
        """Run the prompt now if the session is idle; else steer, queue or refuse.
        ``accepted`` is called once the prompt runs or waits (not when it is refused);
        ``stored`` once it is in the session's history or waits in its inbox, with the
        message id it has there (None for a slash command, as it starts). ``show``: the
        sender leaves showing its prompt to the server (it asked to steer or queue), so
        one that runs at once is shown to it too, as a waiting one would be."""
        command = slash_command(content)
        if command is not None and command[0] == "fork":
            mode = "refuse"  # a fork runs beside whatever runs
        elif command is not None and mode == "steer":
            mode = "queue"  # a command cannot join a turn
        if mode == "refuse" or not (self._busy(session) or self._head(session)):
            # (a prompt that may wait never overtakes one that waits already)
            task = prompt_task(session, content, self.fork, show=show and mode != "refuse")
            tracked = Tracked(task, session, accepted=accepted, stored=stored)
            try:
                return await self.run(session, tracked)
            except SessionBusy:
                if mode == "refuse" or tracked.started:
                    raise
        if not self.store.get_session(session.id):
            raise InvalidParams("the session is gone", {"sessionId": session.id})
        with self.live.leases.waiting_for_prompt():
            prompt = self.store.add_pending(
                session.id, new_id("msg"), mode, content, self.live.owner.id, now_iso()
            )
            session.prompts_changed()
            accepted(session)
            if stored is not None:
                stored(prompt.id)
            self.feed.refresh(session)
            return await self.wait(session, prompt.id)

    async def run(self, session: Session, tracked: Tracked) -> PromptOutcome:
        """Run a task now; when it ends well, what waits runs next."""
        try:
            return await self.live.run(session, tracked)
        finally:
            self.feed.poke(session.id)
            if tracked.ended_well:
                self.drain_soon(session)

    async def wait(self, session: Session, prompt_id: str) -> PromptOutcome | NotRun:
        """Until the prompt has run (its outcome), or was removed or held."""
        while True:
            prompt = self.store.get_pending(prompt_id)
            gone = self.store.get_session(session.id) is None
            if prompt is None or prompt.state == "removed" or (gone and prompt.state != "done"):
                self._collect(prompt)
                return NotRun("removed")
            if prompt.state == "held":
                return NotRun("held")
            if prompt.state == "done":
                self._collect(prompt)
                return outcome_of(prompt)
            if prompt.state == "waiting" and not self._busy(session):
                self.drain_soon(session)  # the work it waited on ended as it was sent
            await self.feed.next_round(LOOK_SECONDS)

    def _collect(self, prompt: PendingPrompt | None) -> None:
        if prompt is not None and prompt.origin == self.live.owner.id:
            self.store.forget_pending([prompt.id])

    def _busy(self, session: Session) -> bool:
        return session.running is not None or self.live.leases.live_holder(session.id) is not None

    # -- what waits, run in order -----------------------------------------------------------

    def drain_soon(self, session: Session) -> None:
        if session.id in self._draining:
            return
        self._draining.add(session.id)
        task = asyncio.get_running_loop().create_task(self._drain(session))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _drain(self, session: Session) -> None:
        """Run what waits, one task at a time, until nothing does, something else runs
        the session, or a task ends cancelled or failed."""
        try:
            # The prompts that joined the work that just ended (steers) are answered at
            # the feed's next look; that look first, so that every client has those
            # answers before the next turn's first update.
            self.feed.looked.pop(session.id, None)  # a look from before the work ended
            self.feed.poke(session.id)
            await self.feed.next_round(LOOK_SECONDS)
            seen = self.feed.looked.pop(session.id, None)
            if seen is not None and not any(p.state == "waiting" for p in seen):
                # That look read the queue after the work ended: nothing waited. A
                # prompt sent since found the session idle and ran at once, or waits
                # in its sender's `wait`, which runs it (one read a turn fewer).
                return
            while (head := self._head(session)) is not None:
                content = head.prompt
                task = prompt_task(session, content, self.fork, message_id=head.id)
                tracked = Tracked(task, session, head.id)
                try:
                    if not await self._run_claimed(session, tracked, head):
                        continue
                except SessionBusy:
                    return  # another task runs it; what waits runs when that ends
                except Exception:
                    return  # recorded on the prompt (its waiter answers); the rest is held
                if not tracked.ended_well:
                    return
        finally:
            self._draining.discard(session.id)
            self.feed.poke(session.id)

    async def _run_claimed(self, session: Session, tracked: Tracked, head: PendingPrompt) -> bool:
        """Take ``head`` under the session's lease and run it; False if another process
        took it first (or it was removed or held meanwhile)."""
        work = tracked.work or Work.TURN
        with self.live.leased(session, work, tracked.lease_turn_id):
            turn_id = f"a{session.transcript.turn_number + 1}"
            if self.store.claim_pending(head.id, turn_id) is None:
                return False
            self.feed.refresh(session)
            await self.live.run_leased(session, tracked)
        return True

    def _head(self, session: Session) -> PendingPrompt | None:
        """Steering that came too late to join the last turn first, then the queue."""
        waiting = [p for p in self.store.pending(session.id) if p.state == "waiting"]
        steering = [p for p in waiting if p.mode == "steer"]
        return (steering or waiting or [None])[0]

    def _hold_unattended(self, session: Session, waiting: list[PendingPrompt]) -> bool:
        """Prompts that wait in a session nobody works on, seen by any window: once a
        sender of one is proven dead (killed with the work it waited on, or as that
        work ended), they are held (shown held, run on ``session/queue/resume``): after
        a crash nothing runs unasked, and nothing overtakes the dead sender's prompt.
        A live sender runs its own. True: look again soon (a sender may yet die)."""
        mine = any(p.origin == self.live.owner.id for p in waiting)
        if not waiting or mine or session.id in self._draining:
            self._unattended.pop(session.id, None)  # (ours: our own wait runs them)
            return False
        gone = [self.live.leases.sender_gone(origin) for origin in {p.origin for p in waiting}]
        if None in gone:  # the store cannot tell: the sender had long enough
            now = time.monotonic()
            if now - self._unattended.setdefault(session.id, now) < UNATTENDED_SECONDS:
                return True
            del self._unattended[session.id]
        elif not any(gone):
            return True
        held = self.store.hold_pending(session.id)
        if held:
            log.warning(
                "held %d prompt(s) of %s whose sender is gone: they run when the user "
                "resumes the queue",
                len(held),
                session.id,
            )
            self.feed.poke(session.id)
        return False

    # -- the queue's methods ---------------------------------------------------------------

    def listed(self, session: Session) -> list[PendingPrompt]:
        return [
            p for p in self.store.pending(session.id) if p.state in ("waiting", "held", "taken")
        ]

    def edit(
        self, session: Session, prompt_id: str, content: list[dict[str, Any]]
    ) -> PendingPrompt:
        prompt = self.store.get_pending(prompt_id)
        edited = None
        if prompt is not None and prompt.session_id == session.id:
            edited = self.store.edit_pending(prompt_id, content)
            session.prompts_changed()
        if edited is None:
            raise InvalidParams(
                f"prompt {prompt_id} is not waiting in session {session.id} (it ran, or was "
                "removed)",
                {"id": prompt_id},
            )
        self.feed.refresh(session)
        return edited

    def remove(self, session: Session, prompt_id: str | None) -> list[str]:
        removed = [p.id for p in self.store.remove_pending(session.id, prompt_id)]
        self.feed.refresh(session)
        self.feed.poke(session.id)
        return removed

    def resume(self, session: Session) -> list[str]:
        """Let held prompts run again. This process sends them now (their sender may be
        dead: that is why they were held) and waits for them in the background, so no
        window holds them again as orphans before they run."""
        leases = self.live.leases
        leases.begin_waiting()
        try:
            released = [p.id for p in self.store.release_pending(session.id, self.live.owner.id)]
            session.prompts_changed()
        except BaseException:
            leases.end_waiting()
            raise
        if not released:
            leases.end_waiting()
            return released
        task = asyncio.get_running_loop().create_task(self._await_resumed(session, released))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self.feed.refresh(session)
        return released

    async def _await_resumed(self, session: Session, released: list[str]) -> None:
        """Wait for resumed prompts as their sender would (`begin_waiting` is done)."""
        try:
            for prompt_id in released:
                with contextlib.suppress(Exception):  # each outcome is on its row
                    await self.wait(session, prompt_id)
        finally:
            self.live.leases.end_waiting()

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
