"""Watching a turn that runs in another process: its answer streams to this client too.

Two editor windows on one session: the one that prompted owns the turn; the other,
on ``session/load``, gets the history, the partial answer so far (from the stream
journal), then the rest of the turn as ordinary ``session/update`` notifications
until the owner releases the lease. The journal is tailed by chunk id; committed
messages are read through the engine's freshness check, and text a message's chunks
already showed is not shown twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from ..store.base import SessionStore, StreamTail
from . import events
from .blocks import shown_text
from .errors import SessionNotFound
from .ids import now_iso
from .mutations import Msg
from .session import Session

log = logging.getLogger(__name__)

POLL_SECONDS = 0.05


class RemoteTurnWatcher:
    def __init__(
        self,
        session: Session,
        owner_id: str,
        *,
        store: SessionStore,
        sync: Callable[[Session], list[Msg]],
    ) -> None:
        self.session = session
        self.owner_id = owner_id
        self.store = store
        self.sync = sync
        self.shown: dict[str, dict[str, int]] = {}
        """Characters of each block kind already announced, by message id."""
        self.last_chunk = 0
        self._task: asyncio.Task[None] | None = None

    @property
    def done(self) -> bool:
        return self._task is not None and self._task.done()

    def start(self) -> None:
        self.session.announce(events.SessionInfo(now_iso(), watching=True))
        self._tail()  # the partial answer so far, before anything else is sent
        self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        token = -1
        try:
            while True:
                lease = self.store.get_lease(self.session.id)
                ended = lease is None or lease.owner.id != self.owner_id
                now = self.store.change_token()
                if now != token or ended:
                    token = now
                    for message in self.sync(self.session):
                        self._committed(message)
                    self._tail()
                if ended:
                    self.session.announce(events.SessionInfo(now_iso(), watching=False))
                    return
                await asyncio.sleep(POLL_SECONDS)
        except SessionNotFound:
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("watching the turn of %s failed", self.session.id)

    def _tail(self) -> None:
        tail: StreamTail = self.store.stream_since(self.session.id, self.last_chunk)
        if tail.message_id is None:
            return
        turn_id = str(tail.meta.get("turnId") or "")
        shown = self.shown.setdefault(tail.message_id, {"text": 0, "thought": 0})
        for chunk_id, block, text in tail.chunks:
            self.last_chunk = chunk_id
            kind = "thought" if block == "thought" else "text"
            shown[kind] += len(text)
            self.session.announce(
                events.MessageChunk(tail.message_id, turn_id, text, kind == "thought")
            )

    def _committed(self, message: Msg) -> None:
        """A message the owner committed: show it, less what its chunks showed."""
        shown = self.shown.pop(message["messageId"], None)
        if shown is None:
            self.session.announce(events.Replayed(message))
            return
        left = dict(shown)
        content: list[dict[str, Any]] = []
        for block in message["content"]:
            kind = block.get("type")
            if kind in ("text", "thought"):
                text = shown_text(block)
                skip = min(left[kind], len(text))
                left[kind] -= skip
                if skip < len(text):
                    content.append({"type": kind, "text": text[skip:]})
            else:
                content.append(block)
        with contextlib.suppress(KeyError):
            self.session.announce(events.Replayed({**message, "content": content}))
