"""Every window sees every change: one watcher per process, fanned out to its sessions.

A client that has a session open (``session/new``, ``load``, ``resume``, a prompt) is
shown every change to it, whoever made it: a turn another window started (its
chunks, tool calls and results as they land, via `watch.RemoteTurn`), compactions,
steering and queued prompts, the title and model, forks, what the session is doing
and in which editor process (``state``, ``owner``), and its deletion (then -32002).

One task per process watches the store's change token (`SessionStore.change_token`:
SQLite's ``data_version``, PostgreSQL's ``LISTEN/NOTIFY`` count) every `POLL_SECONDS`;
only when it moved does it read what windows show of every subscribed session in one
snapshot (`SessionStore.watch`) and announce what differs from what the client was
last shown (`session.Shown`). An idle process with idle sessions does one cheap read
of the token per poll, whatever the number of sessions. Changes made here are shown
at once (`Session.changed` → `refresh`), not at the next poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable

from ..store.base import Lease, PendingPrompt, StoreError, Watched
from ..store.owners import owner_is_dead
from . import events, options
from .blocks import user_message
from .errors import SessionNotFound
from .ids import now_iso
from .live import LiveSessions
from .session import Session
from .tasks import Work
from .watch import RemoteTurn

log = logging.getLogger(__name__)

POLL_SECONDS = 0.05
"""How often the change token is read while this process has a session open."""

LIVENESS_SECONDS = 1.0
"""How often, with no change at all, a session shown as working elsewhere is looked at
again (an owner killed mid-turn commits nothing: its lease just stops being alive)."""

DOWN_SECONDS = 1.0
"""How long the watcher rests after the store failed a read."""

STATES = {"waiting": "queued", "held": "held", "taken": "taken"}
"""A pending prompt's stored state as clients are shown it."""


def _nobody_asks(session: Session, waiting: list[PendingPrompt]) -> bool:
    return False


class Feed:
    def __init__(self, live: LiveSessions) -> None:
        self.live = live
        self.store = live.store
        self.subscribed: dict[str, Session] = {}
        self.turns: dict[str, RemoteTurn] = {}
        self._token: int | None = None
        self._last = 0.0
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._poked: set[str] = set()
        """Sessions to look at in the next round whatever the change feed says."""
        self._round: asyncio.Event | None = None
        self._down_until = 0.0
        self.rounds = 0
        """Fan-outs done (a measure of the watcher's cost)."""
        self.unattended: Callable[[Session, list[PendingPrompt]], bool] = _nobody_asks
        """Told, at each look, the prompts that wait in a session no process works on
        (an empty list otherwise); True: look again soon even if nothing changes
        (`Inbox` holds those whose sender is gone)."""
        self._again: set[str] = set()
        self.looked: dict[str, tuple[PendingPrompt, ...]] = {}
        """The prompts not finished yet in each session at its last look (`watch`): a
        look after a turn ended answers whether anything waits to run next
        (`Inbox._drain`), without a read of its own."""

    # -- subscriptions --------------------------------------------------------------------

    def subscribe(self, session: Session) -> None:
        """Show this client every later change to ``session`` (and, at once, a turn
        another window runs on it now: the partial answer so far, then the rest)."""
        if self.subscribed.get(session.id) is not session:
            self.subscribed[session.id] = session
            newcomer = not session.heard
            session.heard = True
            session.shown.seen_all()  # what came before is what the client looked at
            running = session.running
            so_far = running.task.streaming() if running is not None and newcomer else None
            if so_far is not None:
                session.announce(so_far)  # a turn here its client was not shown yet
            session.changed = self.refresh
            self.refresh(session)
        self._start()

    def unsubscribe(self, session_id: str) -> None:
        self.subscribed.pop(session_id, None)
        self.looked.pop(session_id, None)
        self.turns.pop(session_id, None)
        self._again.discard(session_id)

    def refresh(self, session: Session) -> None:
        """Show what changed of one session now (a change made in this process); never
        fails the work that changed it."""
        if self.subscribed.get(session.id) is not session:
            return
        try:
            self._fan_out([session])
        except StoreError as exc:
            self._unreachable(exc)

    def poke(self, session_id: str) -> None:
        """Look at this session now rather than at the next poll."""
        self._poked.add(session_id)
        if self._wake is not None:
            self._wake.set()

    async def next_round(self, timeout: float) -> None:
        """Wait until the watcher has looked at the store again (or ``timeout``)."""
        self._start()
        if self._round is None:
            self._round = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._round.wait(), timeout)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self.subscribed.clear()
        self.turns.clear()

    # -- the watcher ----------------------------------------------------------------------

    def _start(self) -> None:
        if self._task is not None and not self._task.done():
            return
        with contextlib.suppress(RuntimeError):
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        self._wake = asyncio.Event()
        while self.subscribed or self._round is not None:
            try:
                token = self.store.peek_token()  # no round trip: polled anyway
                stale = time.monotonic() - self._last > LIVENESS_SECONDS and (
                    bool(self._again)
                    or any(
                        s.shown.owner is not None and s.running is None
                        for s in self.subscribed.values()
                    )
                )
                if time.monotonic() < self._down_until:
                    pass  # the store is unreachable: look again after a pause
                elif token != self._token or self._wake.is_set() or stale:
                    changed = self._changed(stale)
                    self._token = token
                    self._wake.clear()
                    poked, self._poked = self._poked, set()
                    if changed is None:
                        self._fan_out(list(self.subscribed.values()), everyone=True)
                    else:
                        ids = changed | poked
                        self._fan_out([s for s in self.subscribed.values() if s.id in ids])
                    self._done_round()
                    self._down_until = 0.0
            except asyncio.CancelledError:
                raise
            except StoreError as exc:
                self._unreachable(exc)
            except Exception:
                log.exception("watching the store for other windows' changes failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), POLL_SECONDS)

    def _unreachable(self, exc: StoreError) -> None:
        """Stop looking for a second (and say so once): reads that wait for an
        unreachable store would stall the turns this process streams."""
        if not self._down_until:
            log.warning("other windows' changes are not shown while the store fails: %s", exc)
        self._down_until = time.monotonic() + DOWN_SECONDS
        self._done_round()

    def _done_round(self) -> None:
        done, self._round = self._round, None
        if done is not None:
            done.set()

    def _changed(self, stale: bool) -> frozenset[str] | None:
        """The subscribed sessions that changed elsewhere since the last round; None:
        look at all of them (the store cannot tell which, as SQLite cannot, or it is
        time to see whether owners are still alive)."""
        if stale or self._token is None:
            return None
        return self.store.changed_since(self._token)

    def _fan_out(self, sessions: list[Session], *, everyone: bool = False) -> None:
        if everyone:
            self._last = time.monotonic()
        if not sessions:
            return
        self.rounds += 1
        token = self.store.peek_token()
        watched = self.store.watch([s.id for s in sessions])
        for session in sessions:
            self.looked[session.id] = watched[session.id].pending
            session.queue_seen(token, watched[session.id].pending)
            try:
                self._show(session, watched[session.id])
            except SessionNotFound:
                self._deleted(session)

    # -- one session ----------------------------------------------------------------------

    def _show(self, session: Session, seen: Watched) -> None:
        if seen.row is None:
            self._deleted(session)
            return
        remote = self._remote(seen.lease)
        self._follow(session, remote, seen)
        if seen.row.last_seq == session.seq:
            session.catch_up([], seen.row)  # a title or model another window set
        shown = session.shown
        if session.title != shown.title and session.title is not None:
            shown.title = session.title
            session.announce(events.SessionInfo(now_iso(), title=session.title))
        model = session.config.model
        if model != shown.model:
            shown.model = model
            session.announce(events.SessionInfo(now_iso(), model=model))
        self._options(session)
        self._state(session, remote, seen.lease)
        self._queue(session, seen, remote)
        known = {fork_id for fork_id, _ in seen.forks}
        if shown.forks is None:
            shown.forks = known  # forks made before the client looked are in session/list
        for fork_id, at in seen.forks:
            if fork_id not in shown.forks:
                shown.forks.add(fork_id)
                session.announce(events.SessionInfo(now_iso(), forked=(fork_id, at)))

    def _options(self, session: Session) -> None:
        """ACP's ``config_option_update`` (all the options) when one changed, and
        ``current_mode_update`` when the mode did. Built-in tools switched in another
        window are switched here too (the stored config was read, the tools not)."""
        now, before = session.options_shown(), session.shown.options
        if now == before:
            return
        session.shown.options = now
        if now[2] != before[2] and session.running is None:
            session.set_builtin_tools(now[2])
        if now[1] != before[1]:
            session.announce(events.ModeChanged(now[1]))
        listed = options.config_options(self.live.providers, session.config)
        session.announce(events.ConfigOptions(tuple(listed)))

    def _remote(self, lease: Lease | None) -> Lease | None:
        """The lease of another live process, if one works on the session."""
        me = self.live.owner
        if lease is None or lease.owner.id == me.id or owner_is_dead(lease, me, time.time()):
            return None
        return lease

    def _follow(self, session: Session, remote: Lease | None, seen: Watched) -> None:
        """Show what other processes committed, and the answer a remote turn streams."""
        turn = self.turns.get(session.id)
        working = remote is not None and remote.kind == Work.TURN and session.running is None
        if working and (turn is None or not turn.active):
            # One follower per session, kept when its turns end: what it has shown of a
            # message is not shown again when that message is committed, even by the
            # process that repairs what a killed owner left.
            if turn is None:
                turn = self.turns[session.id] = RemoteTurn(session, self.store)
            turn.active = True
            session.announce(events.SessionInfo(now_iso(), watching=True))
        assert seen.row is not None
        if seen.row.last_seq != session.seq:
            self.live.sync(session)
        shown = session.shown
        messages, shown.unshown = shown.unshown, []
        if shown.rewound:
            # Rewound in another window: what this client shows is not a prefix any
            # more; it is told how many messages are left (and reloads).
            shown.rewound = False
            session.announce(events.SessionInfo(now_iso(), rewound=len(session.transcript)))
            messages = []
        for message in messages:
            if message["role"] == "user" and message["messageId"] in shown.prompts:
                continue  # a steering prompt, shown when it was sent
            if turn is not None:
                turn.committed(message)
            else:
                session.announce(events.Replayed(message))
        if turn is not None and turn.active:
            turn.tail()
            if not working:
                turn.active = False
                session.announce(events.SessionInfo(now_iso(), watching=False))

    def _state(self, session: Session, remote: Lease | None, lease: Lease | None) -> None:
        owner: events.Owner | None = None
        key: tuple[str, str] | None = None
        if session.running is not None and session.running.work is not None:
            state = session.state
            me = self.live.owner
            since = lease.since if lease is not None and lease.owner.id == me.id else ""
            owner = events.Owner(me.pid, me.host, since, here=True)
            key = (me.id, since)
        elif remote is not None:
            state = Work(remote.kind).state if remote.kind in set(Work) else remote.kind
            if remote.awaiting and remote.kind == Work.TURN:
                state = "requires_action"  # a permission waits in the owner's window
            o = remote.owner
            owner = events.Owner(o.pid, o.host, remote.since, here=False)
            key = (o.id, remote.since)
        else:
            state = "idle"
        shown = session.shown
        if (state, key) == (shown.state, shown.owner):
            return
        shown.state, shown.owner = state, key
        session.announce(events.SessionInfo(now_iso(), state=state, owner=owner))

    def _queue(self, session: Session, seen: Watched, remote: Lease | None) -> None:
        turn = remote.turn_id if remote is not None else None
        number = session.transcript.turn_number
        if turn and turn[1:].isdigit():
            number = max(number, int(turn[1:]))
        waiting: list[events.Queued] = []
        for p in seen.pending:
            if p.mode == "steer":
                session.show_prompt(user_message(number, p.prompt, p.id))
            if p.state in ("waiting", "held"):
                waiting.append(events.Queued(p.id, p.mode, STATES[p.state], p.prompt, p.created_at))
        idle = remote is None and session.running is None
        unrun = [p for p in seen.pending if p.state == "waiting"] if idle else []
        if self.unattended(session, unrun):
            self._again.add(session.id)
        else:
            self._again.discard(session.id)
        key = tuple((q.id, q.state, json.dumps(q.prompt, sort_keys=True)) for q in waiting)
        if key != session.shown.queue:
            session.shown.queue = key
            session.announce(events.SessionInfo(now_iso(), queue=tuple(waiting)))

    def _deleted(self, session: Session) -> None:
        if self.subscribed.pop(session.id, None) is None:
            return
        self.turns.pop(session.id, None)
        session.announce(events.SessionInfo(now_iso(), deleted=True))
        self.live.forget(session)
