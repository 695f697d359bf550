"""Folded transcripts kept, so opening a long session does not fold its whole log.

Reading and folding a long transcript is most of what opening it costs (the store
read, a JSON parse of every event, the fold: ~100 ms at 10,000 messages here); an
editor closes and reopens the same few sessions all day, and every editor window
starts a sidecar that opens them afresh. So folds are kept in two places:

- **In memory**: a closed session's transcript, with the sequence number it was
  folded up to; reopened, only what other processes appended since is folded in.
  Bounded by messages held, least recently closed dropped first.
- **In the store** (`SessionStore.save_fold`): a transcript folded from many events
  is written as two values (``engine/snapshot.py``: the messages with the fold's state,
  and their replay apart), so the next process that opens the session restores it
  without parsing a message until something needs one (history and replay splice the
  kept JSON; history never reads the replay), and folds in only the events after it.
  Written again once `STORE_AFTER` more events were folded, or more messages' replay
  made, than the kept one holds (and a tenth of the transcript, or `STORE_BEHIND`
  events); after the answer that needed the fold (the event loop's next turn), and
  only if the transcript has not changed meanwhile. A fold that cannot be written is
  only a cache lost.

A session grown by prompting is kept the same way as it grows (`grown`, after each
turn: the replay of its new messages made too, so a restart replays none), and
whatever a process holds beyond the store's copy is written when it shuts down
(`flush`, bounded by `FLUSH_SECONDS`). So after a normal exit the next process reads
the kept fold and folds nothing; after a kill -9 the kept fold is at most
`STORE_BEHIND` events (plus the turn and the write that were under way) behind.
Only the capture runs on the event loop (`Transcript.capture`: each new message's JSON
and copies of lists); assembling and writing tens of megabytes run on a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import anyio

from ..store.base import SessionRow, SessionStore, StoreError
from .collector import collector_paused
from .mutations import Msg, from_event
from .transcript import Snapshot, Transcript

log = logging.getLogger(__name__)

MAX_MESSAGES = 100_000
"""Messages kept across all cached transcripts (≈ 2.5 KB of memory each with their
kept JSON, docs/benchmarks.md)."""

STORE_AFTER = 500
"""Events a process folds beyond the store's kept fold (or messages, when it keeps
none; or messages whose replay it made) before it writes the fold there: below that,
folding or replaying them costs a few milliseconds, less than writing would."""

STORE_SHARE = 10
"""…and at least a tenth of the transcript: a fold is rewritten whole (77 MB with its
replay at 100,000 messages), so a long session is not rewritten every 500 events."""

STORE_BEHIND = 2_000
"""…but never more events than this behind while a session grows: what a kill -9 may
leave for the next process to fold (the next writes of a 100,000-message session are
then 2,000 events apart: ~0.1 ms of capture and ~70 KB of writing per event)."""

FLUSH_SECONDS = 10.0
"""What `flush` (shutdown) waits at most for the folds being written: a fold not
written by then is only a cache lost (the log is folded next time)."""

Project = Callable[[Msg], list[dict[str, Any]]]


class FoldCache:
    def __init__(
        self,
        store: SessionStore,
        max_messages: int = MAX_MESSAGES,
        replay: Callable[[], tuple[Project, object]] | None = None,
    ) -> None:
        self._store = store
        self._replay = replay
        """The client's replay projection and its variant, so a fold written as a
        session grows carries its new messages' replay (``None``: it carries none)."""
        self._max = max_messages
        self._held = 0
        self._folds: OrderedDict[str, tuple[Transcript, int]] = OrderedDict()
        self._saving: dict[str, asyncio.Future[bool]] = {}
        """Sessions whose fold a worker thread is writing now."""
        self._stored: dict[str, tuple[int, int] | None] = {}
        """The sequence number of the fold the store keeps and how many messages'
        replay it holds (``None``: none kept), as far as this process knows: what
        decides whether writing it again is worth it."""

    def open(self, row: SessionRow) -> tuple[Transcript, int]:
        """The session's transcript folded to the end of its log as read now, and the
        sequence number of its own last event in it: from memory, else from the store's
        kept fold, else from the whole log."""
        with collector_paused():
            return self._open(row)

    def _open(self, row: SessionRow) -> tuple[Transcript, int]:
        found = self.take(row.id) or self._restore(row.id)
        if found is None:
            events = self._store.load_events(row.id)
            transcript = Transcript.from_events((e.kind, e.payload) for e in events)
            seq = max((e.seq for e in events if e.session_id == row.id), default=0)
        else:
            transcript, seq = found
            if row.last_seq != seq:
                for e in self._store.load_events(row.id, after_seq=seq):
                    transcript.apply(from_event(e.kind, e.payload))
                    seq = e.seq
        self._keep_later(row.id, transcript, seq)
        return transcript, seq

    def _restore(self, session_id: str) -> tuple[Transcript, int] | None:
        try:
            kept = self._store.load_fold(session_id)
        except StoreError as exc:  # only a cache: the log is the truth
            log.warning("could not read the folded transcript of %s: %s", session_id, exc)
            kept = None
        if kept is None:
            self._stored[session_id] = None
            return None
        seq, data = kept
        transcript = Transcript.restore(data, lambda: self._load_replay(session_id, seq))
        if transcript is None:  # another format: folded from the log and written again
            self._stored[session_id] = None
            return None
        self._stored[session_id] = (seq, transcript.replayed)
        return transcript, seq

    def _load_replay(self, session_id: str, seq: int) -> bytes | None:
        """The replay kept beside a restored fold, read when a ``session/load`` (or a
        change) first needs it; ``None`` (made again from the messages) when it cannot
        be read or the store's fold has moved past ``seq`` since."""
        try:
            return self._store.load_fold_replay(session_id, seq)
        except StoreError as exc:
            log.warning("could not read the kept replay of %s: %s", session_id, exc)
            return None

    def put(self, session_id: str, transcript: Transcript, seq: int) -> None:
        """Keep a transcript nobody changes any more (its session was unloaded)."""
        self.drop(session_id)
        self._keep_later(session_id, transcript, seq)
        if len(transcript) > self._max:
            return
        self._folds[session_id] = (transcript, seq)
        self._held += len(transcript)
        while self._held > self._max:
            _, (old, _seq) = self._folds.popitem(last=False)
            self._held -= len(old)

    def take(self, session_id: str) -> tuple[Transcript, int] | None:
        """The fold kept in memory and its sequence number, handed over (no longer
        kept here)."""
        found = self._folds.pop(session_id, None)
        if found is not None:
            self._held -= len(found[0])
        return found

    def drop(self, session_id: str) -> None:
        self.take(session_id)

    def __len__(self) -> int:
        return len(self._folds)

    # -- the store's copy ------------------------------------------------------------------

    def grown(self, session_id: str, transcript: Transcript, seq: int) -> None:
        """A live session's transcript after a turn (or a compaction): written to the
        store once it is far enough ahead of the copy kept there."""
        self._keep_later(session_id, transcript, seq, growing=True)

    def _ahead(self, session_id: str, transcript: Transcript, seq: int) -> int:
        """Events folded (or messages replayed) beyond the store's copy."""
        stored = self._stored.get(session_id)
        if stored is None:
            return len(transcript)
        return max(seq - stored[0], transcript.replayed - stored[1])

    def _keep_later(
        self, session_id: str, transcript: Transcript, seq: int, *, growing: bool = False
    ) -> None:
        """Write the fold to the store if it is far enough ahead of the one kept there,
        once the current request is answered."""
        ahead = self._ahead(session_id, transcript, seq)
        due = max(STORE_AFTER, len(transcript) // STORE_SHARE)
        if growing:
            due = max(STORE_AFTER, min(due, STORE_BEHIND))
        if ahead < due:
            return
        changes = transcript.changes
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._write(session_id, transcript, seq, changes)
            return
        loop.call_soon(self._write, session_id, transcript, seq, changes)

    def _write(self, session_id: str, transcript: Transcript, seq: int, changes: int) -> None:
        """Capture the fold here (it must see the transcript as it is now), then
        assemble and write it: on a worker thread when an event loop runs, since a long
        session's fold is tens of megabytes and the loop serves every other session
        meanwhile."""
        if transcript.changes != changes or session_id in self._saving:
            return  # changed since: the fold is written at its next open or close
        snapshot = self._capture(transcript)
        if snapshot is None:
            return
        kept = (seq, len(snapshot.replayed))
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._saved(session_id, kept, self._save(session_id, seq, snapshot))
            return
        saving = loop.run_in_executor(None, self._save, session_id, seq, snapshot)
        self._saving[session_id] = saving
        saving.add_done_callback(
            lambda done: self._saved(session_id, kept, not done.cancelled() and done.result())
        )

    def _capture(self, transcript: Transcript) -> Snapshot | None:
        with collector_paused():  # a long transcript's lengths and pieces: 100,000s of objects
            if self._replay is not None:
                project, variant = self._replay()
                transcript.make_replay(project, variant)
            return transcript.capture()

    async def flush(self, live: Iterable[tuple[str, Transcript, int]]) -> None:
        """At shutdown: write every fold this process holds beyond the store's copy
        (live sessions and closed ones kept here, of `STORE_AFTER` messages or more),
        and wait for the writes under way, for at most `FLUSH_SECONDS`."""
        held = [*live, *((sid, t, seq) for sid, (t, seq) in self._folds.items())]
        with anyio.move_on_after(FLUSH_SECONDS):
            for session_id, transcript, seq in held:
                if len(transcript) < STORE_AFTER:
                    continue
                pending = self._saving.get(session_id)
                if pending is not None:
                    await asyncio.wait([pending])
                if self._ahead(session_id, transcript, seq) > 0:
                    self._write(session_id, transcript, seq, transcript.changes)
            if self._saving:
                await asyncio.wait(list(self._saving.values()))

    def _save(self, session_id: str, seq: int, snapshot: Snapshot) -> bool:
        folded = snapshot.assemble()
        if folded is None:
            return False
        try:
            self._store.save_fold(session_id, seq, folded.messages, folded.replay)
        except StoreError as exc:
            log.warning("could not keep the folded transcript of %s: %s", session_id, exc)
            return False
        except Exception:  # run after the answer, maybe after the store closed: a cache lost
            log.warning("could not keep the folded transcript of %s", session_id, exc_info=True)
            return False
        return True

    def _saved(self, session_id: str, kept: tuple[int, int], ok: bool) -> None:
        self._saving.pop(session_id, None)
        if ok:
            self._stored[session_id] = kept
