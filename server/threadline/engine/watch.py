"""Following a turn that runs in another process: its answer streams to this client too.

Two editor windows on one session: the one that prompted owns the turn; the other
shows it as it goes, whether it loaded the session while the turn ran or the turn
started later. `feed.Feed` keeps one `RemoteTurn` per session this one has open and
that another process has run turns on: on every change it reads the journal's new chunks by
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
    def __init__(self, session: Session, store: SessionStore) -> None:
        self.session = session
        self.store = store
        self.active = False
        """A turn runs elsewhere now (its journal is tailed)."""
        self.shown: dict[str, dict[str, int]] = {}
        """Characters of each block kind already announced, by message id."""
        self.last_chunk = 0

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
