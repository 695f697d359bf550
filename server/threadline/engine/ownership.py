"""This process's leases on sessions: taken around work that writes, kept alive by a
heartbeat, and the channel through which another process interrupts our turns.

Two editor windows are two sidecars on one store. Whoever runs a turn (or a
compaction, or a repair of what a dead process left) holds the session's lease; the
other gets -32010 with the holder's pid, host and start time, and can still ask the
holder to stop: the request is a flag on the lease that the holder's heartbeat
reads within `HEARTBEAT_SECONDS`.

The same heartbeat keeps this process's presence fresh while it waits for prompts it
sent (`waiting`): the proof other windows need before they take such a prompt for a
dead sender's and hold it (`sender_gone`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Generator

from ..store.base import Acquired, Lease, Owner, SessionStore, StoreError
from ..store.owners import HEARTBEAT_SECONDS, owner_is_dead
from .errors import SessionBusy
from .tasks import Work

log = logging.getLogger(__name__)

REPAIR_WAITS = 30
"""Tries, 10 ms apart, before a repair lease held elsewhere refuses our work."""


def busy_error(session_id: str, lease: Lease) -> SessionBusy:
    owner = lease.owner
    doing: dict[str, str] = {
        Work.TURN: "running",
        Work.COMPACT: "compacting",
        Work.REPAIR: "being repaired",
    }
    what = doing.get(lease.kind, lease.kind)
    return SessionBusy(
        f"this session is {what} in another editor (Threadline pid {owner.pid} on "
        f"{owner.host}, since {lease.since}); interrupt it there or wait until it finishes",
        {
            "sessionId": session_id,
            "state": "running" if lease.kind == Work.TURN else lease.kind,
            "owner": {"pid": owner.pid, "host": owner.host, "since": lease.since},
        },
    )


class LeaseKeeper:
    def __init__(
        self, store: SessionStore, owner: Owner, on_interrupt: Callable[[str], None]
    ) -> None:
        self.store = store
        self.owner = owner
        self.on_interrupt = on_interrupt
        self.held: set[str] = set()
        self.waiting = 0
        """Prompts this process sent and waits for (`Inbox.prompt`)."""
        self._beat: asyncio.Task[None] | None = None

    def acquire(self, session_id: str, kind: Work, turn_id: str | None = None) -> Acquired:
        """Take the lease or raise `SessionBusy` naming the process that holds it."""
        got = self.store.acquire_lease(session_id, self.owner, kind.value, turn_id, time.time())
        for _ in range(REPAIR_WAITS):
            # Another sidecar reading the session may hold it for a repair, which is a
            # single write: worth a few milliseconds' wait rather than a refusal.
            if got.mine or got.lease.kind != Work.REPAIR:
                break
            time.sleep(0.01)
            got = self.store.acquire_lease(session_id, self.owner, kind.value, turn_id, time.time())
        if not got.mine:
            raise busy_error(session_id, got.lease)
        self.held.add(session_id)
        self._start_heartbeat()
        return got

    def release(self, session_id: str) -> None:
        if session_id not in self.held:
            return
        self.held.discard(session_id)
        try:
            self.store.release_lease(session_id, self.owner)
        except StoreError as exc:
            # Left behind, the lease is ours again at our next acquire, and dies with
            # this process (pid gone) or its heartbeat.
            log.warning("could not release the lease on %s: %s", session_id, exc)

    def live_holder(self, session_id: str) -> Lease | None:
        """Another live process's lease on the session, if any."""
        lease = self.store.get_lease(session_id)
        if lease is None or lease.owner.id == self.owner.id:
            return None
        if owner_is_dead(lease, self.owner, time.time()):
            return None
        return lease

    def check_free(self, session_id: str) -> None:
        lease = self.live_holder(session_id)
        if lease is not None:
            raise busy_error(session_id, lease)

    @contextlib.contextmanager
    def waiting_for_prompt(self) -> Generator[None]:
        """Around a prompt this process stores (or resumes) and waits for: its presence
        is in the store (announced before the prompt is, refreshed by the heartbeat)
        until its last such wait ends, so no other window holds the prompt while we
        live."""
        self.begin_waiting()
        try:
            yield
        finally:
            self.end_waiting()

    def begin_waiting(self) -> None:
        """`waiting_for_prompt`'s start (each one needs its `end_waiting`)."""
        self.waiting += 1
        if self.waiting == 1:
            try:
                self.store.announce_owner(self.owner, time.time())
            except BaseException:
                self.waiting -= 1
                raise
            self._start_heartbeat()

    def end_waiting(self) -> None:
        self.waiting -= 1
        if self.waiting == 0:
            try:
                self.store.forget_owner(self.owner)
            except Exception as exc:  # (a closed store at shutdown) the row is stale
                # once our pid is gone or its heartbeat older than the TTL: no harm
                log.warning("could not say that this process waits no more: %s", exc)

    def sender_gone(self, owner_id: str) -> bool | None:
        """Whether the process that sent a waiting prompt is proven dead: it waits no
        more (closed, or its request was cancelled), its heartbeat is older than the
        lease lifetime, or (same host) its pid is gone or reused. None: this store
        cannot tell (a role not granted the owners table)."""
        if owner_id == self.owner.id:
            return False
        if not self.store.keeps_owners:
            return None
        presence = self.store.get_owner(owner_id)
        return presence is None or owner_is_dead(presence, self.owner, time.time())

    def _start_heartbeat(self) -> None:
        if self._beat is not None and not self._beat.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # synchronous start-up work: released before anyone could look
        self._beat = loop.create_task(self._heartbeat())

    async def _heartbeat(self) -> None:
        failing = False
        while self.held or self.waiting:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            if not (self.held or self.waiting):
                return
            try:
                wanted = self.store.heartbeat(self.owner, time.time(), present=self.waiting > 0)
            except StoreError as exc:
                if not failing:
                    log.warning("lease heartbeat failed: %s", exc)
                failing = True
                continue
            failing = False
            for session_id in wanted:
                if session_id in self.held:
                    self.on_interrupt(session_id)

    async def aclose(self) -> None:
        if self._beat is not None:
            self._beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beat
        for session_id in list(self.held):
            self.release(session_id)
        if self.waiting:
            with contextlib.suppress(StoreError):
                self.store.forget_owner(self.owner)  # what we waited for: held elsewhere
