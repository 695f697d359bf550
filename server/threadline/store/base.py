"""What the engine needs from a session store, typed so a second backend can slot in.

Every editor window starts its own sidecar, and by default they share one data
folder, so a store is written by several processes at once (later by several
machines, on PostgreSQL). The contract that keeps them from damaging each other:

- **Append at an expected sequence.** A session's own events are numbered; an append
  names the sequence number it expects to follow and fails with `StoreConflict` if
  another writer got there first, instead of interleaving two histories.
- **Leases.** A process that runs a turn, a compaction or a repair on a session holds
  its lease (owner id, pid, host, heartbeat). Only the holder appends to the session
  or writes its stream journal; a lease whose owner is dead (`leases.owner_is_dead`)
  may be taken over, and only then is its journal recovered.
- **A change feed.** `change_token()` moves whenever another process commits, so
  readers can keep folded transcripts and check them with one cheap call.

Both implementations, `store.sqlite.EventStore` and `store.postgres.PostgresStore`,
share their operations (`store.sql.SqlStore`) and differ in how statements run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


class StoreError(Exception):
    """The store could not be opened, read or written; the message says what to do."""

    def __init__(self, message: str, *, reason: str = "store_error", where: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        """``disk_full``, ``wal_lost``, ``unreachable`` or ``store_error``."""
        self.where = where
        """The folder (or host) of the store, for the person reading the error."""


class StoreConflict(StoreError):
    """An append found the session further along than the writer expected."""


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    parent_id: str | None
    base_id: str | None
    base_seq: int
    base_count: int
    forked_at_message_id: str | None
    cwd: str
    title: str | None
    config: dict[str, Any]
    created_at: str
    updated_at: str
    own_count: int
    last_seq: int
    deleted: bool
    archived: bool = False
    """Left out of the session list unless asked for; still loadable and searchable."""
    tags: tuple[str, ...] = ()
    preview: str | None = None
    """The first line of the session's first prompt (a fork's is its parent's)."""
    streaming: bool | None = field(default=None, compare=False)
    """Whether a stream journal was in flight (`inflight_stream`) when `get_session`
    read the row, in the same statement: opening a session asks for the journal only
    when there is one (a round trip less on a server). ``None``: not read."""

    @property
    def message_count(self) -> int:
        return self.base_count + self.own_count


@dataclass(frozen=True, slots=True)
class StoredEvent:
    session_id: str
    seq: int
    kind: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Blob:
    """The bytes of one image, their type and size in pixels, named by their SHA-256."""

    hash: str
    mime_type: str
    data: bytes
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class BlobInfo:
    hash: str
    mime_type: str
    size: int
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to append; ``message_ids`` lists the messages it creates, in order."""

    kind: str
    payload: dict[str, Any]
    message_ids: Sequence[str] = ()
    blobs: Sequence[Blob] = ()
    """The images its payload references by hash (`store.blobs`), stored with it."""
    message_count: int | None = None
    """Set by an event that cuts the transcript (a rewind, its undoing): how many
    messages the session holds after it (before ``message_ids``)."""


@dataclass(frozen=True, slots=True)
class InflightStream:
    """The journal of an answer being streamed: what a crash must not lose."""

    session_id: str
    message_id: str
    meta: dict[str, Any]
    text: str
    thought: str
    last_chunk: int = 0
    """Id of the newest journal chunk read; a watcher asks for chunks after it."""


@dataclass(frozen=True, slots=True)
class Owner:
    """One sidecar process, as other processes see it in a lease."""

    id: str
    pid: int
    host: str
    started: float
    """Process start time (seconds since boot on Linux), so a reused pid is not taken
    for the owner that died."""


@dataclass(frozen=True, slots=True)
class Presence:
    """A process that waits for prompts it sent (`SessionStore.announce_owner`)."""

    owner: Owner
    heartbeat: float
    """Wall-clock seconds of its last heartbeat."""


@dataclass(frozen=True, slots=True)
class Lease:
    session_id: str
    owner: Owner
    kind: str
    """What the owner is doing: ``turn``, ``compact`` or ``repair``."""
    turn_id: str | None
    since: str
    heartbeat: float
    """Wall-clock seconds of the owner's last heartbeat."""
    interrupt: bool
    """Another process asked the owner to stop the turn."""
    awaiting: bool = False
    """The owner's turn waits for its user (a permission request, a question): every
    window shows the session as ``requires_action`` (`SessionStore.mark_awaiting`)."""


@dataclass(frozen=True, slots=True)
class Acquired:
    """The outcome of `SessionStore.acquire_lease`."""

    lease: Lease
    """Ours when ``mine``; otherwise the live lease of the process that holds it."""
    mine: bool
    took_over: Lease | None = None
    """The dead owner's lease we replaced: its stream journal needs recovering."""
    journaled: bool = True
    """Whether the session had a stream journal when the lease was taken (True where
    not known): with none, the new holder has no answer to recover, and need not ask."""


@dataclass(frozen=True, slots=True)
class StreamTail:
    """Journal chunks after a known one, for a process watching a turn run elsewhere."""

    message_id: str | None
    meta: dict[str, Any]
    chunks: list[tuple[int, str, str]]
    """``(chunk id, block, text)`` in order; block is ``text`` or ``thought``."""


@dataclass(frozen=True, slots=True)
class PendingPrompt:
    """A prompt sent while the session worked (`store.pending`): a steer for the running
    turn, or a queued prompt for a later one."""

    id: str
    """The message id it is stored under once it joins the transcript."""
    session_id: str
    position: int
    mode: str
    """``steer`` or ``queue``."""
    prompt: list[dict[str, Any]]
    state: str
    """``waiting``, ``held``, ``taken``, ``done`` or ``removed``."""
    turn_id: str | None
    outcome: dict[str, Any] | None
    created_at: str
    origin: str
    """The owner id of the process that added it (which waits for its outcome)."""


@dataclass(frozen=True, slots=True)
class Watched:
    """What every window shows of one session, read in one snapshot (`SessionStore.watch`)."""

    row: SessionRow | None
    """None once the session is deleted."""
    lease: Lease | None
    pending: tuple[PendingPrompt, ...]
    """Prompts not finished yet (waiting, held or taken), in order."""
    forks: tuple[tuple[str, str | None], ...]
    """``(fork id, forked-at message id)`` of the sessions forked from it."""


@dataclass(frozen=True, slots=True)
class SessionDump:
    """One session's own rows, deleted or not (a fork's deleted base still holds its
    prefix), as `threadline store migrate` copies them between backends."""

    row: SessionRow
    events: list[StoredEvent]
    messages: list[tuple[str, int, int]]
    """``(message id, seq, ordinal)`` of the messages the session's own events created."""
    blobs: Sequence[Blob] = ()
    """The images its own events reference (`store.blobs`)."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    session_id: str
    message_id: str | None
    """None for a hit in the session's title."""
    role: str
    """``user``, ``assistant``, ``tool`` or ``title``."""
    snippet: str
    """The matched text around the match, each matched word between ``store.search.MARK_START``
    and ``MARK_END``."""
    title: str | None
    cwd: str
    updated_at: str
    archived: bool


class SessionStore(Protocol):
    """The operations the engine performs on durable sessions."""

    # -- change feed ------------------------------------------------------------------

    def change_token(self) -> int:
        """A number that changes when another process has committed since the last call
        (it may also change spuriously); cheap enough to call before every read."""
        ...

    def peek_token(self) -> int:
        """`change_token` as far as this process has heard, without asking the store
        (PostgreSQL: no round trip; notifications are read as they arrive by a thread
        of the store's own): for a poller that looks again soon anyway, never for a
        read that must see what committed before it."""
        ...

    def changed_since(self, token: int) -> frozenset[str] | None:
        """The sessions other processes changed since ``token`` (a `peek_token`), as
        far as this process has heard; None when it cannot tell which (SQLite's
        ``data_version`` says only that something did). A watcher that shows many
        sessions reads only these (`engine.feed`)."""
        ...

    # -- sessions ---------------------------------------------------------------------

    def create_session(
        self, session_id: str, cwd: str, config: dict[str, Any], now: str, title: str | None = None
    ) -> SessionRow: ...

    def get_session(self, session_id: str, include_deleted: bool = False) -> SessionRow | None: ...

    def list_session_ids(
        self, cwd: str | None = None, *, archived: bool = False, tag: str | None = None
    ) -> list[str]:
        """Every visible session, most recently updated first: the snapshot a stable
        page walk is cut from. Archived sessions only (``archived``) or none of them;
        with ``tag``, only the sessions that carry it."""
        ...

    def get_sessions(self, session_ids: Sequence[str]) -> dict[str, SessionRow]:
        """Rows of the given sessions that still exist and are not deleted."""
        ...

    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        config: dict[str, Any] | None = None,
        now: str | None = None,
    ) -> None: ...

    def set_archived(self, session_id: str, archived: bool) -> bool:
        """Archive or unarchive; False when the session does not exist."""
        ...

    def set_tags(self, session_id: str, tags: Sequence[str]) -> bool:
        """Replace the session's tags; False when the session does not exist."""
        ...

    def search(
        self, terms: Sequence[str], cwd: str | None, limit: int, offset: int
    ) -> list[SearchHit]:
        """Titles and message texts that hold every term, best first (`store.search`)."""
        ...

    def import_session_log(
        self,
        session_id: str,
        cwd: str,
        title: str | None,
        config: dict[str, Any],
        tags: Sequence[str],
        events: Sequence[NewEvent],
        now: str,
    ) -> SessionRow:
        """A new session with its whole log, in one transaction: all of it or nothing."""
        ...

    def delete_session(self, session_id: str, owner: Owner, now: float) -> Lease | None:
        """Delete unless another live process holds the lease; returns that lease then."""
        ...

    # -- forks ------------------------------------------------------------------------

    def locate_message(self, session_id: str, message_id: str) -> tuple[str, int, int] | None: ...

    def last_message_id(self, session_id: str) -> str | None: ...

    def fork_session(
        self,
        new_id: str,
        parent: SessionRow,
        base_id: str,
        base_seq: int,
        base_count: int,
        forked_at_message_id: str | None,
        cwd: str,
        now: str,
        title: str | None = None,
    ) -> SessionRow: ...

    # -- events -----------------------------------------------------------------------

    def append(
        self,
        session_id: str,
        events: Iterable[NewEvent],
        now: str,
        end_stream: bool = False,
        *,
        expected_seq: int | None = None,
    ) -> int:
        """Append in one transaction; returns the new last sequence number. Raises
        `StoreConflict` when ``expected_seq`` is not the session's last one, and
        `KeyError` when the session is gone."""
        ...

    def load_events(self, session_id: str, after_seq: int | None = None) -> list[StoredEvent]:
        """The logical log (bases' prefixes, then own events); with ``after_seq``, only
        the session's own events after that number."""
        ...

    # -- kept folds ---------------------------------------------------------------------

    def load_fold(self, session_id: str) -> tuple[int, bytes] | None:
        """What `save_fold` kept for the session, with the sequence number of its own
        events it is folded up to; ``None`` when nothing is kept (or it claims more
        events than the session has)."""
        ...

    def load_fold_replay(self, session_id: str, seq: int) -> bytes | None:
        """The replay kept with the session's fold, if that fold is still the one at
        ``seq`` (read apart: ``session/history`` needs only the messages, ``data``)."""
        ...

    def save_fold(
        self, session_id: str, seq: int, data: bytes, replay: bytes | None = None
    ) -> None:
        """Keep a folded transcript (``engine/folds.py``), so a process that opens the
        session later reads one row instead of folding its whole log, and its replay
        beside it (`load_fold_replay`). Never replaces a fold of a later sequence
        number, nor is kept past the session's log; gone with the session. May be
        called from a worker thread (a long session's fold is tens of megabytes: the
        event loop does not wait for it), so a backend writes it on a connection of its
        own, never inside the event loop's transaction."""
        ...

    # -- streaming journal --------------------------------------------------------------

    def begin_stream(self, session_id: str, message_id: str, meta: dict[str, Any]) -> None: ...

    def append_chunks(self, session_id: str, chunks: Sequence[tuple[str, str]]) -> None: ...

    journal_window: float
    """Seconds a streamed burst may wait after the last journal write for others to
    share the next (`engine.bursts`): 0 where a write is in process (SQLite), a few
    milliseconds where each is a round trip and a notification (PostgreSQL)."""

    def append_bursts(self, bursts: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> None:
        """Journal the bursts of many sessions (``(session id, chunks)``) in one write:
        what `append_chunks` of each would keep."""
        ...

    def inflight_streams(self) -> list[InflightStream]: ...

    def inflight_stream(self, session_id: str) -> InflightStream | None: ...

    def stream_since(self, session_id: str, after_chunk: int) -> StreamTail: ...

    def clear_stream(self, session_id: str) -> None: ...

    # -- leases -----------------------------------------------------------------------

    def acquire_lease(
        self, session_id: str, owner: Owner, kind: str, turn_id: str | None, now: float
    ) -> Acquired:
        """Take the session's lease if it is free, ours, or its owner is dead."""
        ...

    def release_lease(self, session_id: str, owner: Owner) -> None: ...

    def get_lease(self, session_id: str) -> Lease | None: ...

    def heartbeat(self, owner: Owner, now: float, *, present: bool = False) -> list[str]:
        """Refresh every lease of ``owner`` (and, ``present``, its `announce_owner`
        row); returns the sessions whose interrupt another process asked for."""
        ...

    keeps_owners: bool
    """Whether this store can say which senders are alive (a PostgreSQL role not
    granted ``tl_owners`` cannot: `Presence` rows are then neither written nor read)."""

    def announce_owner(self, owner: Owner, now: float) -> None:
        """Say that ``owner`` waits for prompts it sent (kept fresh by `heartbeat`), so
        other processes do not take its waiting prompts for a dead sender's."""
        ...

    def forget_owner(self, owner: Owner) -> None:
        """``owner`` waits for no prompt any more (or is closing)."""
        ...

    def get_owner(self, owner_id: str) -> Presence | None: ...

    def request_interrupt(self, session_id: str) -> Lease | None:
        """Ask the holder of the session's lease to stop its turn."""
        ...

    def mark_awaiting(self, session_id: str, owner: Owner, awaiting: bool) -> None:
        """Say on our lease whether its turn waits for the user (`Lease.awaiting`)."""
        ...

    # -- pending prompts (store.pending) ------------------------------------------------

    def add_pending(
        self,
        session_id: str,
        prompt_id: str,
        mode: str,
        prompt: list[dict[str, Any]],
        origin: str,
        now: str,
    ) -> PendingPrompt:
        """Store a prompt sent while the session works, last in its order; `KeyError`
        when the session is gone."""
        ...

    def pending(self, session_id: str) -> list[PendingPrompt]:
        """Every row of the session's pending prompts, finished ones included, in order."""
        ...

    def get_pending(self, prompt_id: str) -> PendingPrompt | None: ...

    def edit_pending(
        self, prompt_id: str, prompt: list[dict[str, Any]]
    ) -> PendingPrompt | None: ...

    def remove_pending(
        self, session_id: str, prompt_id: str | None = None
    ) -> list[PendingPrompt]: ...

    def claim_pending(self, prompt_id: str, turn_id: str) -> PendingPrompt | None:
        """Take a waiting prompt for a turn, at most once across every process."""
        ...

    def unclaim_pending(self, prompt_id: str) -> None: ...

    def finish_pending(self, prompt_ids: Sequence[str], outcome: dict[str, Any]) -> None: ...

    def hold_pending(self, session_id: str) -> list[PendingPrompt]: ...

    def release_pending(self, session_id: str, origin: str) -> list[PendingPrompt]: ...

    def forget_pending(self, prompt_ids: Sequence[str]) -> None: ...

    def watch(self, session_ids: Sequence[str]) -> dict[str, Watched]:
        """What windows show of each session, in one snapshot (one change token fans out
        to every loaded session with this one read)."""
        ...

    def get_blob(self, hash: str) -> tuple[BlobInfo, bytes] | None:
        """An image's bytes by their hash (`store.blobs`), or None."""
        ...

    def session_blob(self, session_id: str, hash: str) -> tuple[BlobInfo, bytes] | None:
        """`get_blob`, only for an image the session (or a base it reads) references."""
        ...

    def close(self) -> None: ...
