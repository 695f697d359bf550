"""The session store's operations written once, for SQLite and PostgreSQL alike.

The two backends keep the same tables and the same rules (`store.base`); what differs
is how a statement runs (one local connection and SQLite's file locks, or a pool of
connections to a server that may go away), how other writers are noticed, and a few
words of SQL. So every operation is written here once, in one SQL spelling, and a
backend supplies the seam: `SqlStore._read`, `_snapshot`, `_write` and `_quiet`
run a piece of work on a `Statements` handle, which turns the shared spelling into
the backend's (`Dialect.sql`).

The shared spelling is SQLite's with two additions PostgreSQL needs: ``?`` marks
parameters, tables are named without a prefix, and ``FOR UPDATE`` locks a row that
the transaction goes on to change (SQLite's write transaction already excludes
every other writer, so there it is dropped). Booleans are written ``TRUE`` and
``FALSE`` and upserts as ``ON CONFLICT … DO UPDATE``, which both understand.
"""

from __future__ import annotations

import functools
import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .base import (
    Acquired,
    InflightStream,
    Lease,
    NewEvent,
    Owner,
    SessionRow,
    StoreConflict,
    StoredEvent,
    StoreError,
    StreamTail,
)
from .codec import dumps, loads
from .owners import owner_is_dead

T = TypeVar("T")

TABLES = ("sessions", "events", "messages", "inflight", "chunks", "leases", "folds", "pending")
"""The tables the shared statements name (a backend may prefix them)."""

COLS = (
    "id, parent_id, base_id, base_seq, base_count, forked_at_message_id, cwd, title, "
    "config, created_at, updated_at, own_count, last_seq, deleted"
)
LEASE_COLS = "session_id, owner_id, pid, host, started, kind, turn_id, since, heartbeat, interrupt"

MAX_CHAIN = 10_000
"""Fork depth past which a chain is taken for a cycle (a damaged store)."""

ID_BATCH = 500
"""Ids per ``IN (…)`` list, well under either backend's parameter limit."""


def session_row(r: Sequence[Any]) -> SessionRow:
    return SessionRow(
        id=r[0],
        parent_id=r[1],
        base_id=r[2],
        base_seq=r[3],
        base_count=r[4],
        forked_at_message_id=r[5],
        cwd=r[6],
        title=r[7],
        config=json.loads(r[8]),
        created_at=r[9],
        updated_at=r[10],
        own_count=r[11],
        last_seq=r[12],
        deleted=bool(r[13]),
    )


def lease_row(r: Sequence[Any]) -> Lease:
    return Lease(
        session_id=r[0],
        owner=Owner(id=r[1], pid=r[2], host=r[3], started=r[4]),
        kind=r[5],
        turn_id=r[6],
        since=r[7],
        heartbeat=r[8],
        interrupt=bool(r[9]),
    )


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


@dataclass(frozen=True, slots=True)
class Dialect:
    """The few ways a backend's SQL differs from the shared spelling."""

    prefix: str
    """Put before every table name (PostgreSQL's tables share a schema with others)."""
    mark: str
    """The driver's parameter mark."""
    row_locks: bool
    """Whether ``FOR UPDATE`` means anything (not in SQLite)."""
    text: Callable[[str | None], str | None]
    """What a text column of this backend accepts (`codec.safe_text` or stricter)."""
    session_lock: str | None = None
    """A statement that serializes lease and delete decisions on one session across
    connections, when the write transaction alone does not."""

    def sql(self, statement: str) -> str:
        return _translate(statement, self.prefix, self.mark, self.row_locks)


_TABLE = re.compile(r"\b(" + "|".join(TABLES) + r")\b")


@functools.cache
def _translate(statement: str, prefix: str, mark: str, row_locks: bool) -> str:
    if prefix:
        statement = _TABLE.sub(prefix + r"\1", statement)
    if mark != "?":
        statement = statement.replace("?", mark)
    if not row_locks:
        statement = statement.replace(" FOR UPDATE", "")
    return statement


class Cursor(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> Any: ...

    def executemany(self, query: Any, params_seq: Any, /) -> Any: ...

    def close(self) -> Any: ...


class Connection(Protocol):
    """What both drivers' connections offer (`sqlite3` and psycopg)."""

    def execute(self, query: Any, params: Any = ..., /) -> Cursor: ...

    def cursor(self) -> Cursor: ...


class Statements:
    """A connection inside one piece of work, taking statements in the shared spelling."""

    __slots__ = ("_conn", "_dialect")

    def __init__(self, conn: Connection, dialect: Dialect) -> None:
        self._conn = conn
        self._dialect = dialect

    def one(self, sql: str, args: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self._conn.execute(self._dialect.sql(sql), args).fetchone()
        return row

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._conn.execute(self._dialect.sql(sql), args).fetchall()
        return rows

    def run(self, sql: str, args: Sequence[Any] = ()) -> None:
        self._conn.execute(self._dialect.sql(sql), args)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        cur = self._conn.cursor()
        try:
            cur.executemany(self._dialect.sql(sql), rows)
        finally:
            cur.close()

    def lock_session(self, session_id: str) -> None:
        if self._dialect.session_lock is not None:
            self.run(self._dialect.session_lock, (session_id,))


class SqlStore(ABC):
    """`store.base.SessionStore` over SQL tables; a backend supplies how work runs."""

    dialect: Dialect
    keeps_folds: bool = True
    """Whether this connection may use the folds table (a role with privileges on the
    older tables only may not: then folds are neither read, written nor deleted)."""

    # -- the seam ---------------------------------------------------------------------

    @abstractmethod
    def _read(self, work: Callable[[Statements], T]) -> T:
        """Reads that need no common snapshot (each statement sees the latest commit)."""

    @abstractmethod
    def _snapshot(self, work: Callable[[Statements], T]) -> T:
        """Several reads that must see one snapshot."""

    @abstractmethod
    def _write(self, work: Callable[[Statements], T]) -> T:
        """One write transaction, which other processes are told of."""

    def _quiet(self, work: Callable[[Statements], T]) -> T:
        """A write nobody else needs to fold in (a heartbeat, a kept fold): by default a
        write."""
        return self._write(work)

    @abstractmethod
    def _aside(self, work: Callable[[Statements], None]) -> None:
        """A write of its own, on a connection of its own, callable from any thread (a
        kept fold): it never joins, nor waits on the Python side for, the event loop's
        transactions."""

    def _text(self, value: str | None) -> str | None:
        return self.dialect.text(value)

    # -- sessions ---------------------------------------------------------------------

    def create_session(
        self, session_id: str, cwd: str, config: dict[str, Any], now: str, title: str | None = None
    ) -> SessionRow:
        args = (session_id, self._text(cwd), self._text(title), dumps(config), now, now)
        self._write(
            lambda db: db.run(
                "INSERT INTO sessions(id, cwd, title, config, created_at, updated_at) "
                "VALUES(?,?,?,?,?,?)",
                args,
            )
        )
        row = self.get_session(session_id)
        assert row is not None
        return row

    def get_session(self, session_id: str, include_deleted: bool = False) -> SessionRow | None:
        r = self._read(lambda db: db.one(f"SELECT {COLS} FROM sessions WHERE id=?", (session_id,)))
        if r is None:
            return None
        row = session_row(r)
        if row.deleted and not include_deleted:
            return None
        return row

    def list_session_ids(self, cwd: str | None = None) -> list[str]:
        if cwd is None:
            sql, args = "SELECT id FROM sessions WHERE NOT deleted", ()
        else:
            # stored the same way, so a lone surrogate matches
            sql, args = "SELECT id FROM sessions WHERE NOT deleted AND cwd=?", (self._text(cwd),)
        rows = self._read(lambda db: db.all(sql + " ORDER BY updated_at DESC, id DESC", args))
        return [r[0] for r in rows]

    def get_sessions(self, session_ids: Sequence[str]) -> dict[str, SessionRow]:
        def work(db: Statements) -> dict[str, SessionRow]:
            out: dict[str, SessionRow] = {}
            for i in range(0, len(session_ids), ID_BATCH):
                part = list(session_ids[i : i + ID_BATCH])
                marks = ",".join("?" * len(part))
                for r in db.all(
                    f"SELECT {COLS} FROM sessions WHERE NOT deleted AND id IN ({marks})", part
                ):
                    row = session_row(r)
                    out[row.id] = row
            return out

        return self._read(work)

    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        config: dict[str, Any] | None = None,
        now: str | None = None,
    ) -> None:
        sets: list[str] = []
        args: list[Any] = []
        if title is not None:
            sets.append("title=?")
            args.append(self._text(title))
        if config is not None:
            sets.append("config=?")
            args.append(dumps(config))
        if now is not None:
            sets.append("updated_at=?")
            args.append(now)
        if not sets:
            return
        sql = f"UPDATE sessions SET {', '.join(sets)} WHERE id=?"
        self._write(lambda db: db.run(sql, (*args, session_id)))

    def delete_session(
        self, session_id: str, owner: Owner | None = None, now: float | None = None
    ) -> Lease | None:
        """Hide a session; its rows go only once no fork still reads them. With an
        ``owner``, a session another live process holds is left alone and its lease
        returned."""

        def work(db: Statements) -> Lease | None:
            db.lock_session(session_id)
            if owner is not None:
                held = self._live_lease(db, session_id, owner, now or 0.0)
                if held is not None:
                    return held
            db.run("UPDATE sessions SET deleted=TRUE WHERE id=?", (session_id,))
            db.run("DELETE FROM leases WHERE session_id=?", (session_id,))
            if self.keeps_folds:
                db.run("DELETE FROM folds WHERE session_id=?", (session_id,))
            self._collect(db, session_id)
            return None

        return self._write(work)

    def _collect(self, db: Statements, session_id: str) -> None:
        """Drop a deleted session's rows once no fork reads them, then its bases'."""
        while True:
            r = db.one("SELECT deleted, base_id FROM sessions WHERE id=? FOR UPDATE", (session_id,))
            if r is None or not r[0]:
                return
            if db.one("SELECT 1 FROM sessions WHERE base_id=? LIMIT 1", (session_id,)):
                return
            base_id: str | None = r[1]
            for table in ("events", "messages", "chunks", "inflight", "folds"):
                if table != "folds" or self.keeps_folds:
                    db.run(f"DELETE FROM {table} WHERE session_id=?", (session_id,))
            db.run("DELETE FROM sessions WHERE id=?", (session_id,))
            if base_id is None:
                return
            session_id = base_id

    # -- forks ------------------------------------------------------------------------

    def locate_message(self, session_id: str, message_id: str) -> tuple[str, int, int] | None:
        """Where a message visible in ``session_id`` was written: (origin, seq, ordinal)."""
        r = self._read(
            lambda db: db.one(
                "SELECT session_id, seq, ordinal FROM messages WHERE message_id=?", (message_id,)
            )
        )
        if r is None:
            return None
        origin, seq, ordinal = str(r[0]), int(r[1]), int(r[2])
        # Visible only if origin is this session or an ancestor at or before the base point.
        for sid, limit in self._chain(session_id):
            if sid == origin and (limit is None or seq <= limit):
                return origin, seq, ordinal
        return None

    def last_message_id(self, session_id: str) -> str | None:
        """The newest message visible in a session (its own, else its base's prefix)."""
        for sid, limit in self._chain(session_id):
            r = self._read(
                lambda db, sid=sid, limit=limit: db.one(
                    "SELECT message_id FROM messages WHERE session_id=? AND seq<=? "
                    "ORDER BY ordinal DESC LIMIT 1",
                    (sid, _upto(limit)),
                )
            )
            if r is not None:
                return str(r[0])
        return None

    def _chain(self, session_id: str, *, strict: bool = False) -> Iterator[tuple[str, int | None]]:
        """The session, then each base with the sequence number its fork reads up to.
        Ends where a session is missing, or (``strict``) raises `KeyError` there, and
        `StoreError` for a chain too deep to be anything but a cycle."""
        sid, limit = session_id, None
        for _ in range(MAX_CHAIN):
            yield sid, limit
            row = self.get_session(sid, include_deleted=True)
            if row is None:
                if strict:
                    raise KeyError(sid)
                return
            if row.base_id is None:
                return
            sid, limit = row.base_id, row.base_seq
        if strict:
            raise StoreError(f"fork chain of {session_id} is too deep or cyclic")

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
    ) -> SessionRow:
        """Write the one row a fork costs."""
        args = (
            new_id,
            parent.id,
            base_id,
            base_seq,
            base_count,
            forked_at_message_id,
            self._text(cwd),
            self._text(title) if title is not None else parent.title,
            dumps(parent.config),
            now,
            now,
        )
        self._write(
            lambda db: db.run(
                "INSERT INTO sessions(id, parent_id, base_id, base_seq, base_count, "
                "forked_at_message_id, cwd, title, config, created_at, updated_at) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                args,
            )
        )
        row = self.get_session(new_id)
        assert row is not None
        return row

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
        """Append events in one transaction; returns the last sequence number."""
        batch = list(events)

        def work(db: Statements) -> int:
            r = db.one(
                "SELECT last_seq, base_count + own_count FROM sessions "
                "WHERE id=? AND NOT deleted FOR UPDATE",
                (session_id,),
            )
            if r is None:
                raise KeyError(session_id)
            seq, ordinal = int(r[0]), int(r[1])
            if expected_seq is not None and seq != expected_seq:
                raise StoreConflict(
                    f"session {session_id} is at event {seq}, not {expected_seq}: "
                    "another process wrote to it"
                )
            rows: list[tuple[str, int, str, str]] = []
            messages: list[tuple[str, str, int, int]] = []
            for ev in batch:
                seq += 1
                rows.append((session_id, seq, ev.kind, dumps(ev.payload)))
                for mid in ev.message_ids:
                    ordinal += 1
                    messages.append((mid, session_id, seq, ordinal))
            db.many("INSERT INTO events(session_id, seq, kind, payload) VALUES(?,?,?,?)", rows)
            db.many(
                "INSERT INTO messages(message_id, session_id, seq, ordinal) VALUES(?,?,?,?)",
                messages,
            )
            db.run(
                "UPDATE sessions SET last_seq=?, own_count=own_count+?, updated_at=? WHERE id=?",
                (seq, len(messages), now, session_id),
            )
            if end_stream:
                self._clear_journal(db, session_id)
            return seq

        return self._write(work)

    def load_events(self, session_id: str, after_seq: int | None = None) -> list[StoredEvent]:
        """The session's logical log: its bases' prefixes, then its own events."""
        if after_seq is not None:
            rows = self._read(
                lambda db: db.all(
                    "SELECT seq, kind, payload FROM events WHERE session_id=? AND seq>? "
                    "ORDER BY seq",
                    (session_id, after_seq),
                )
            )
            return [StoredEvent(session_id, q, k, loads(p)) for q, k, p in rows]
        chain = list(self._chain(session_id, strict=True))

        def work(db: Statements) -> list[StoredEvent]:
            out: list[StoredEvent] = []
            for sid, limit in reversed(chain):
                out.extend(
                    StoredEvent(sid, s, k, loads(p))
                    for s, k, p in db.all(
                        "SELECT seq, kind, payload FROM events WHERE session_id=? AND seq<=? "
                        "ORDER BY seq",
                        (sid, _upto(limit)),
                    )
                )
            return out

        return self._read(work)

    # -- kept folds -------------------------------------------------------------------

    def load_fold(self, session_id: str) -> tuple[int, bytes] | None:
        if not self.keeps_folds:
            return None
        r = self._read(
            lambda db: db.one(
                "SELECT folds.seq, folds.data FROM folds JOIN sessions "
                "ON sessions.id=folds.session_id "
                "WHERE folds.session_id=? AND folds.seq<=sessions.last_seq "
                "AND NOT sessions.deleted",
                (session_id,),
            )
        )
        if r is None:
            return None
        data = r[1]
        return int(r[0]), data if isinstance(data, bytes) else bytes(data)

    def save_fold(self, session_id: str, seq: int, data: bytes) -> None:
        if not self.keeps_folds:
            return
        self._aside(
            lambda db: db.run(
                "INSERT INTO folds(session_id, seq, data) SELECT ?, ?, ? "
                "WHERE EXISTS(SELECT 1 FROM sessions WHERE id=? AND NOT deleted AND last_seq>=?) "
                "ON CONFLICT(session_id) DO UPDATE SET seq=excluded.seq, data=excluded.data "
                "WHERE excluded.seq >= folds.seq",
                (session_id, seq, data, session_id, seq),
            )
        )

    # -- streaming journal ------------------------------------------------------------

    def begin_stream(self, session_id: str, message_id: str, meta: dict[str, Any]) -> None:
        def work(db: Statements) -> None:
            db.run("DELETE FROM chunks WHERE session_id=?", (session_id,))
            db.run(
                "INSERT INTO inflight(session_id, message_id, payload) VALUES(?,?,?) "
                "ON CONFLICT(session_id) DO UPDATE SET message_id=excluded.message_id, "
                "payload=excluded.payload",
                (session_id, message_id, dumps(meta)),
            )

        self._write(work)

    def inflight_streams(self) -> list[InflightStream]:
        ids = self._read(lambda db: db.all("SELECT session_id FROM inflight"))
        out: list[InflightStream] = []
        for (sid,) in ids:
            stream = self.inflight_stream(sid)
            if stream is not None:
                out.append(stream)
        return out

    def inflight_stream(self, session_id: str) -> InflightStream | None:
        tail = self.stream_since(session_id, 0)
        if tail.message_id is None:
            return None
        text: list[str] = []
        thought: list[str] = []
        for _, block, t in tail.chunks:
            (thought if block == "thought" else text).append(t)
        last = tail.chunks[-1][0] if tail.chunks else 0
        return InflightStream(
            session_id, tail.message_id, tail.meta, "".join(text), "".join(thought), last
        )

    def stream_since(self, session_id: str, after_chunk: int) -> StreamTail:
        def work(db: Statements) -> StreamTail:
            r = db.one("SELECT message_id, payload FROM inflight WHERE session_id=?", (session_id,))
            if r is None:
                return StreamTail(None, {}, [])
            chunks = db.all(
                "SELECT id, block, text FROM chunks WHERE session_id=? AND id>? ORDER BY id",
                (session_id, after_chunk),
            )
            return StreamTail(r[0], json.loads(r[1]), [(c[0], c[1], c[2]) for c in chunks])

        # The header and the chunks belong to one snapshot (one stream).
        return self._snapshot(work)

    def clear_stream(self, session_id: str) -> None:
        self._write(lambda db: self._clear_journal(db, session_id))

    @staticmethod
    def _clear_journal(db: Statements, session_id: str) -> None:
        db.run("DELETE FROM inflight WHERE session_id=?", (session_id,))
        db.run("DELETE FROM chunks WHERE session_id=?", (session_id,))

    # -- leases -----------------------------------------------------------------------

    def get_lease(self, session_id: str) -> Lease | None:
        return self._read(lambda db: self._lease(db, session_id))

    @staticmethod
    def _lease(db: Statements, session_id: str) -> Lease | None:
        r = db.one(f"SELECT {LEASE_COLS} FROM leases WHERE session_id=?", (session_id,))
        return None if r is None else lease_row(r)

    def _live_lease(self, db: Statements, session_id: str, me: Owner, now: float) -> Lease | None:
        """The lease of another process that is still alive, if any."""
        lease = self._lease(db, session_id)
        if lease is None or lease.owner.id == me.id or owner_is_dead(lease, me, now):
            return None
        return lease

    def acquire_lease(
        self, session_id: str, owner: Owner, kind: str, turn_id: str | None, now: float
    ) -> Acquired:
        since = iso(now)

        def work(db: Statements) -> Acquired:
            db.lock_session(session_id)
            held = self._lease(db, session_id)
            took_over: Lease | None = None
            if held is not None and held.owner.id != owner.id:
                if not owner_is_dead(held, owner, now):
                    return Acquired(held, mine=False)
                took_over = held
            elif held is None and db.one(
                "SELECT 1 FROM inflight WHERE session_id=?", (session_id,)
            ):
                # A journal with no lease: its writer died before taking one or after
                # losing it (or was a Threadline older than leases). It is ours to recover.
                took_over = Lease(session_id, Owner("", 0, "", 0.0), "turn", None, "", 0.0, False)
            db.run(
                f"INSERT INTO leases({LEASE_COLS}) VALUES(?,?,?,?,?,?,?,?,?,FALSE) "
                "ON CONFLICT(session_id) DO UPDATE SET owner_id=excluded.owner_id, "
                "pid=excluded.pid, host=excluded.host, started=excluded.started, "
                "kind=excluded.kind, turn_id=excluded.turn_id, since=excluded.since, "
                "heartbeat=excluded.heartbeat, interrupt=FALSE",
                (
                    *(session_id, owner.id, owner.pid, owner.host, owner.started),
                    *(kind, turn_id, since, now),
                ),
            )
            lease = Lease(session_id, owner, kind, turn_id, since, now, False)
            return Acquired(lease, mine=True, took_over=took_over)

        return self._write(work)

    def release_lease(self, session_id: str, owner: Owner) -> None:
        self._write(
            lambda db: db.run(
                "DELETE FROM leases WHERE session_id=? AND owner_id=?", (session_id, owner.id)
            )
        )

    def heartbeat(self, owner: Owner, now: float) -> list[str]:
        rows = self._quiet(
            lambda db: db.all(
                "UPDATE leases SET heartbeat=? WHERE owner_id=? RETURNING session_id, interrupt",
                (now, owner.id),
            )
        )
        return [r[0] for r in rows if r[1]]

    def request_interrupt(self, session_id: str) -> Lease | None:
        r = self._write(
            lambda db: db.one(
                f"UPDATE leases SET interrupt=TRUE WHERE session_id=? RETURNING {LEASE_COLS}",
                (session_id,),
            )
        )
        return None if r is None else lease_row(r)


def _upto(limit: int | None) -> int:
    """A fork's read limit as a bound every sequence number passes when there is none."""
    return 2**62 if limit is None else limit
