"""Folded transcripts of closed sessions, kept so reopening one does not refold it.

Reading and folding a long transcript is most of what opening it costs (SQLite read,
JSON parse of every event, the fold: ~100 ms at 10,000 messages here); an editor
closes and reopens the same few sessions all day. A closed session's transcript is
kept with the sequence number it was folded up to; reopened, the engine's freshness
check (``Engine._sync``) folds in only what other processes appended since. Bounded by
messages held, least recently closed dropped first.
"""

from __future__ import annotations

from collections import OrderedDict

from .transcript import Transcript

MAX_MESSAGES = 100_000
"""Messages kept across all cached transcripts (≈ 2.5 KB of memory each with their
kept JSON, docs/benchmarks.md)."""


class FoldCache:
    def __init__(self, max_messages: int = MAX_MESSAGES) -> None:
        self._max = max_messages
        self._held = 0
        self._folds: OrderedDict[str, tuple[Transcript, int]] = OrderedDict()

    def put(self, session_id: str, transcript: Transcript, seq: int) -> None:
        """Keep a transcript nobody changes any more (its session was unloaded)."""
        self.drop(session_id)
        if len(transcript) > self._max:
            return
        self._folds[session_id] = (transcript, seq)
        self._held += len(transcript)
        while self._held > self._max:
            _, (old, _seq) = self._folds.popitem(last=False)
            self._held -= len(old)

    def take(self, session_id: str) -> tuple[Transcript, int] | None:
        """The kept fold and its sequence number, handed over (no longer kept here)."""
        found = self._folds.pop(session_id, None)
        if found is not None:
            self._held -= len(found[0])
        return found

    def drop(self, session_id: str) -> None:
        self.take(session_id)

    def __len__(self) -> int:
        return len(self._folds)
