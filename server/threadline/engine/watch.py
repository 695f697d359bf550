"""Following a turn that runs in another process: its answer streams to this client too.

Two editor windows on one session: the one that prompted owns the turn; the other
shows it as it goes, whether it loaded the session while the turn ran or the turn
started later. `feed.Feed` drives one `RemoteTurn` per turn another process runs on a
session this one has loaded: on every change it reads the journal's new chunks by
chunk id (`tail`) and the messages the owner committed (`committed`); text a
message's chunks already showed is not shown twice.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from ..store.base import SessionStore, StreamTail
from . import events
from .blocks import shown_text
from .mutations import Msg
from .session import Session

log = logging.getLogger(__name__)


class RemoteTurn:
    def __init__(self, session: Session, owner_id: str, since: str, store: SessionStore) -> None:
        self.session = session
        self.owner_id = owner_id
        self.since = since
        self.store = store
        self.shown: dict[str, dict[str, int]] = {}
        """Characters of each block kind already announced, by message id."""
        self.last_chunk = 0

    def runs(self, owner_id: str, since: str) -> bool:
        """Whether this follows the work that lease names."""
        return self.owner_id == owner_id and self.since == since

    def tail(self) -> None:
        """Announce the journal's chunks since the last look (the partial answer so
        far, the first time)."""
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

    def committed(self, message: Msg) -> None:
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
