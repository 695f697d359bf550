"""SQLite event store: the one durable source of truth for every session.

A session is an append-only log of mutation events. A fork is a single row that
points at a *base* session and a sequence number in it: reading the fork reads the
base's prefix and then the fork's own events, so forking costs the same for a
10-message session as for a 100,000-message one. Streaming deltas of an answer in
flight are journaled separately so a crash mid-answer can be recovered as a
truncated message.

Each process accesses it on its event-loop thread through one connection; commits
are cheap in WAL mode with ``synchronous=NORMAL`` (durable across a process crash,
the failure an editor sidecar actually sees). Several sidecars share one file: the
contract that keeps them apart (appends at an expected sequence, leases, the change
token) is `store.base`'s.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sqlite3
import stat
import time
from collections.abc import Generator, Iterable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .base import (
    Acquired,
    InflightStream,
    Lease,
    NewEvent,
    Owner,
    SessionDump,
    SessionRow,
    StoreConflict,
    StoredEvent,
    StoreError,
    StreamTail,
)
from .codec import dumps as _dumps
from .codec import loads as _loads
from .codec import safe_text as _text
from .owners import owner_is_dead

__all__ = [
    "EventStore",
    "InflightStream",
    "NewEvent",
    "SessionRow",
    "StoreConflict",
    "StoreError",
    "StoredEvent",
]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
"""1: sessions, events, messages, journal. 2: leases (many processes on one store)."""

BUSY_TIMEOUT = 10.0
"""Seconds a write waits for another process's transaction before it fails."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions(
    id TEXT PRIMARY KEY,
    parent_id TEXT,
    base_id TEXT,
    base_seq INTEGER NOT NULL DEFAULT 0,
    base_count INTEGER NOT NULL DEFAULT 0,
    forked_at_message_id TEXT,
    cwd TEXT NOT NULL,
    title TEXT,
    config TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    own_count INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0,
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_base ON sessions(base_id);
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions(updated_at);
CREATE TABLE IF NOT EXISTS events(
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY(session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages(
    message_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ordinal INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS messages_session ON messages(session_id, ordinal);
CREATE TABLE IF NOT EXISTS inflight(
    session_id TEXT PRIMARY KEY,
    message_id TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    block TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_session ON chunks(session_id);
CREATE TABLE IF NOT EXISTS leases(
    session_id TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    started REAL NOT NULL,
    kind TEXT NOT NULL,
    turn_id TEXT,
    since TEXT NOT NULL,
    heartbeat REAL NOT NULL,
    interrupt INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS leases_owner ON leases(owner_id);
"""

_LEASE_COLS = "session_id, owner_id, pid, host, started, kind, turn_id, since, heartbeat, interrupt"


def _lease(r: tuple[Any, ...]) -> Lease:
    return Lease(
        session_id=r[0],
        owner=Owner(id=r[1], pid=r[2], host=r[3], started=r[4]),
        kind=r[5],
        turn_id=r[6],
        since=r[7],
        heartbeat=r[8],
        interrupt=bool(r[9]),
    )


_COLS = (
    "id, parent_id, base_id, base_seq, base_count, forked_at_message_id, cwd, title, "
    "config, created_at, updated_at, own_count, last_seq, deleted"
)


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def _row(r: tuple[Any, ...]) -> SessionRow:
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


class EventStore:
    """Append-only session logs with copy-on-write forks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(path.parent, 0o700)
        self._wal = Path(str(path) + "-wal")
        old_umask = os.umask(0o077)
        try:
            self._db = self._connect()
            self._check_integrity()
            self._check_version()
            self._db.executescript(_SCHEMA)
            self._db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        except sqlite3.DatabaseError as exc:
            if _disk_full(exc, path.parent):
                raise self._failure(exc) from exc
            raise StoreError(
                f"cannot open the session store at {path}: {exc}. Move the file aside "
                "(sessions in it are not deleted) or set THREADLINE_HOME to another folder.",
                where=str(path.parent),
            ) from exc
        finally:
            os.umask(old_umask)
        self._wal_id = self._wal_identity()
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(path) + suffix)
            if p.exists():
                os.chmod(p, stat.S_IRUSR | stat.S_IWUSR)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT
        )
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=OFF")
        return db

    def _failure(self, exc: sqlite3.Error) -> StoreError:
        """A store error a person can act on."""
        folder = self.path.parent
        if _disk_full(exc, folder):
            return StoreError(
                f"disk full: the disk holding the session store ({folder}) has no room left "
                f"({exc}). Free some space; what was already shown is kept and saved then.",
                reason="disk_full",
                where=str(folder),
            )
        return StoreError(f"the session store at {self.path} failed: {exc}", where=str(folder))

    def _wal_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self._wal)
        except FileNotFoundError:
            return None
        return st.st_dev, st.st_ino

    def _check_wal(self) -> None:
        """A write-ahead log deleted under a live connection (a cleanup tool, a sync
        client) takes every later commit with it at the next crash, silently. Before a
        commit is acknowledged, make sure it went to the file SQLite will read back; if
        not, move what the lost log holds into the database and start a new log."""
        now = self._wal_identity()
        if now == self._wal_id or (now is None and self._wal_id is None):
            return
        log.error(
            "the store's write-ahead log %s was deleted or replaced while Threadline was "
            "running; saving what it held into the database",
            self._wal,
        )
        try:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("PRAGMA journal_mode=DELETE")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('wal_reset', ?)",
                (_iso(time.time()),),
            )
        except sqlite3.Error as exc:
            raise StoreError(
                f"the session store's write-ahead log ({self._wal}) was deleted while "
                f"Threadline was running, and what it held could not be saved ({exc}); "
                "stop every Threadline process using this folder and start again",
                reason="wal_lost",
                where=str(self.path.parent),
            ) from exc
        self._wal_id = self._wal_identity()

    def _check_integrity(self) -> None:
        row = self._db.execute("PRAGMA quick_check").fetchone()
        if row is None or row[0] != "ok":
            raise sqlite3.DatabaseError(f"integrity check failed: {row[0] if row else '?'}")

    def _check_version(self) -> None:
        """A store written by a newer Threadline is left alone, not half-upgraded."""
        has_meta = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        ).fetchone()
        if not has_meta:
            return
        r = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if r is not None and int(r[0]) > SCHEMA_VERSION:
            raise StoreError(
                f"the session store at {self.path} was written by a newer Threadline "
                f"(schema {r[0]}, this one knows {SCHEMA_VERSION}); upgrade Threadline or set "
                "THREADLINE_HOME to another folder"
            )

    def change_token(self) -> int:
        # data_version moves when another connection commits; our own commits are
        # already folded into whatever the caller caches.
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        self._db.close()

    @contextmanager
    def _read(self) -> Generator[sqlite3.Connection, None, None]:
        """Several reads that must see one snapshot."""
        self._db.execute("BEGIN")
        try:
            yield self._db
        finally:
            self._db.execute("COMMIT")

    @contextmanager
    def _tx(self) -> Generator[sqlite3.Connection, None, None]:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc
        try:
            yield self._db
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise self._failure(exc) from exc
            raise
        try:
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            raise self._failure(exc) from exc
        self._check_wal()

    # -- sessions -----------------------------------------------------------------

    def create_session(
        self, session_id: str, cwd: str, config: dict[str, Any], now: str, title: str | None = None
    ) -> SessionRow:
        with self._tx() as db:
            db.execute(
                "INSERT INTO sessions(id, cwd, title, config, created_at, updated_at) "
                "VALUES(?,?,?,?,?,?)",
                (session_id, _text(cwd), _text(title), _dumps(config), now, now),
            )
        row = self.get_session(session_id)
        assert row is not None
        return row

    def get_session(self, session_id: str, include_deleted: bool = False) -> SessionRow | None:
        r = self._db.execute(f"SELECT {_COLS} FROM sessions WHERE id=?", (session_id,)).fetchone()
        if r is None:
            return None
        row = _row(r)
        if row.deleted and not include_deleted:
            return None
        return row

    def list_session_ids(self, cwd: str | None = None) -> list[str]:
        if cwd is None:
            cur = self._db.execute(
                "SELECT id FROM sessions WHERE deleted=0 ORDER BY updated_at DESC, id DESC"
            )
        else:
            cur = self._db.execute(
                "SELECT id FROM sessions WHERE deleted=0 AND cwd=? "
                "ORDER BY updated_at DESC, id DESC",
                (_text(cwd),),  # stored the same way, so a lone surrogate matches
            )
        return [r[0] for r in cur]

    def get_sessions(self, session_ids: Sequence[str]) -> dict[str, SessionRow]:
        out: dict[str, SessionRow] = {}
        for i in range(0, len(session_ids), 500):
            part = list(session_ids[i : i + 500])
            marks = ",".join("?" * len(part))
            for r in self._db.execute(
                f"SELECT {_COLS} FROM sessions WHERE deleted=0 AND id IN ({marks})", part
            ):
                row = _row(r)
                out[row.id] = row
        return out

    # -- export (threadline store migrate) ------------------------------------------------

    def dump_ids(self) -> list[str]:
        """Every session with rows, deleted bases included, bases before their forks."""
        return [r[0] for r in self._db.execute("SELECT id FROM sessions ORDER BY rowid")]

    def dump_session(self, session_id: str) -> SessionDump | None:
        with self._read() as db:
            r = db.execute(f"SELECT {_COLS} FROM sessions WHERE id=?", (session_id,)).fetchone()
            if r is None:
                return None
            events = [
                StoredEvent(session_id, q, k, _loads(p))
                for q, k, p in db.execute(
                    "SELECT seq, kind, payload FROM events WHERE session_id=? ORDER BY seq",
                    (session_id,),
                )
            ]
            messages = [
                (str(m), int(q), int(o))
                for m, q, o in db.execute(
                    "SELECT message_id, seq, ordinal FROM messages WHERE session_id=? "
                    "ORDER BY ordinal",
                    (session_id,),
                )
            ]
        return SessionDump(_row(r), events, messages)

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
            args.append(_text(title))
        if config is not None:
            sets.append("config=?")
            args.append(_dumps(config))
        if now is not None:
            sets.append("updated_at=?")
            args.append(now)
        if not sets:
            return
        with self._tx() as db:
            db.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id=?", (*args, session_id))

    def delete_session(
        self, session_id: str, owner: Owner | None = None, now: float | None = None
    ) -> Lease | None:
        """Hide a session; its events go only once no fork still reads them. With an
        ``owner``, a session another live process holds is left alone and its lease
        returned."""
        with self._tx() as db:
            if owner is not None:
                held = self._live_lease(db, session_id, owner, now or 0.0)
                if held is not None:
                    return held
            db.execute("UPDATE sessions SET deleted=1 WHERE id=?", (session_id,))
            db.execute("DELETE FROM leases WHERE session_id=?", (session_id,))
            self._collect(db, session_id)
        return None

    def _collect(self, db: sqlite3.Connection, session_id: str) -> None:
        while True:
            r = db.execute(
                "SELECT deleted, base_id FROM sessions WHERE id=?", (session_id,)
            ).fetchone()
            if r is None or not r[0]:
                return
            if db.execute(
                "SELECT 1 FROM sessions WHERE base_id=? LIMIT 1", (session_id,)
            ).fetchone():
                return
            base_id: str | None = r[1]
            db.execute("DELETE FROM events WHERE session_id=?", (session_id,))
            db.execute("DELETE FROM messages WHERE session_id=?", (session_id,))
            db.execute("DELETE FROM chunks WHERE session_id=?", (session_id,))
            db.execute("DELETE FROM inflight WHERE session_id=?", (session_id,))
            db.execute("DELETE FROM sessions WHERE id=?", (session_id,))
            if base_id is None:
                return
            session_id = base_id

    # -- forks --------------------------------------------------------------------

    def locate_message(self, session_id: str, message_id: str) -> tuple[str, int, int] | None:
        """Where a message visible in ``session_id`` was written: (origin, seq, ordinal)."""
        r = self._db.execute(
            "SELECT session_id, seq, ordinal FROM messages WHERE message_id=?", (message_id,)
        ).fetchone()
        if r is None:
            return None
        origin, seq, ordinal = r[0], r[1], r[2]
        # Visible only if origin is this session or an ancestor at or before the base point.
        sid = session_id
        limit: int | None = None
        for _ in range(10_000):
            if sid == origin and (limit is None or seq <= limit):
                return origin, seq, ordinal
            row = self.get_session(sid, include_deleted=True)
            if row is None or row.base_id is None:
                return None
            sid, limit = row.base_id, row.base_seq
        return None

    def last_message_id(self, session_id: str) -> str | None:
        """The newest message visible in a session (its own, else its base's prefix)."""
        sid: str | None = session_id
        limit: int | None = None
        while sid is not None:
            sql = "SELECT message_id FROM messages WHERE session_id=?"
            args: list[Any] = [sid]
            if limit is not None:
                sql += " AND seq<=?"
                args.append(limit)
            r = self._db.execute(sql + " ORDER BY ordinal DESC LIMIT 1", args).fetchone()
            if r is not None:
                return str(r[0])
            row = self.get_session(sid, include_deleted=True)
            if row is None:
                return None
            sid, limit = row.base_id, row.base_seq
        return None

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
        with self._tx() as db:
            db.execute(
                "INSERT INTO sessions(id, parent_id, base_id, base_seq, base_count, "
                "forked_at_message_id, cwd, title, config, created_at, updated_at) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                (
                    new_id,
                    parent.id,
                    base_id,
                    base_seq,
                    base_count,
                    forked_at_message_id,
                    _text(cwd),
                    _text(title) if title is not None else parent.title,
                    _dumps(parent.config),
                    now,
                    now,
                ),
            )
        row = self.get_session(new_id)
        assert row is not None
        return row

    # -- events -------------------------------------------------------------------

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
        with self._tx() as db:
            r = db.execute(
                "SELECT last_seq, base_count + own_count FROM sessions WHERE id=? AND deleted=0",
                (session_id,),
            ).fetchone()
            if r is None:
                raise KeyError(session_id)
            seq, ordinal = r[0], r[1]
            if expected_seq is not None and seq != expected_seq:
                raise StoreConflict(
                    f"session {session_id} is at event {seq}, not {expected_seq}: "
                    "another process wrote to it"
                )
            added = 0
            for ev in events:
                seq += 1
                db.execute(
                    "INSERT INTO events(session_id, seq, kind, payload) VALUES(?,?,?,?)",
                    (session_id, seq, ev.kind, _dumps(ev.payload)),
                )
                for mid in ev.message_ids:
                    ordinal += 1
                    added += 1
                    db.execute(
                        "INSERT INTO messages(message_id, session_id, seq, ordinal) "
                        "VALUES(?,?,?,?)",
                        (mid, session_id, seq, ordinal),
                    )
            db.execute(
                "UPDATE sessions SET last_seq=?, own_count=own_count+?, updated_at=? WHERE id=?",
                (seq, added, now, session_id),
            )
            if end_stream:
                db.execute("DELETE FROM inflight WHERE session_id=?", (session_id,))
                db.execute("DELETE FROM chunks WHERE session_id=?", (session_id,))
        return seq

    def load_events(self, session_id: str, after_seq: int | None = None) -> list[StoredEvent]:
        """The session's logical log: its bases' prefixes, then its own events."""
        if after_seq is not None:
            cur = self._db.execute(
                "SELECT seq, kind, payload FROM events WHERE session_id=? AND seq>? ORDER BY seq",
                (session_id, after_seq),
            )
            return [StoredEvent(session_id, q, k, _loads(p)) for q, k, p in cur]
        chain: list[tuple[str, int | None]] = []
        sid: str | None = session_id
        limit: int | None = None
        while sid is not None:
            row = self.get_session(sid, include_deleted=True)
            if row is None:
                raise KeyError(sid)
            chain.append((sid, limit))
            sid, limit = row.base_id, row.base_seq
            if len(chain) > 10_000:
                raise StoreError(f"fork chain of {session_id} is too deep or cyclic")
        out: list[StoredEvent] = []
        loads = _loads
        for sid, lim in reversed(chain):
            if lim is None:
                cur = self._db.execute(
                    "SELECT seq, kind, payload FROM events WHERE session_id=? ORDER BY seq", (sid,)
                )
            else:
                cur = self._db.execute(
                    "SELECT seq, kind, payload FROM events WHERE session_id=? AND seq<=? "
                    "ORDER BY seq",
                    (sid, lim),
                )
            out.extend(StoredEvent(sid, s, k, loads(p)) for s, k, p in cur)
        return out

    # -- streaming journal ----------------------------------------------------------

    def begin_stream(self, session_id: str, message_id: str, meta: dict[str, Any]) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM chunks WHERE session_id=?", (session_id,))
            db.execute(
                "INSERT OR REPLACE INTO inflight(session_id, message_id, payload) VALUES(?,?,?)",
                (session_id, message_id, _dumps(meta)),
            )

    def append_chunks(self, session_id: str, chunks: Sequence[tuple[str, str]]) -> None:
        if not chunks:
            return
        with self._tx() as db:
            db.executemany(
                "INSERT INTO chunks(session_id, block, text) VALUES(?,?,?)",
                [(session_id, b, _text(t)) for b, t in chunks],
            )

    def inflight_streams(self) -> list[InflightStream]:
        out: list[InflightStream] = []
        for (sid,) in self._db.execute("SELECT session_id FROM inflight").fetchall():
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
        # One read transaction, so the header and the chunks belong to the same stream.
        with self._read() as db:
            r = db.execute(
                "SELECT message_id, payload FROM inflight WHERE session_id=?", (session_id,)
            ).fetchone()
            if r is None:
                return StreamTail(None, {}, [])
            chunks = db.execute(
                "SELECT id, block, text FROM chunks WHERE session_id=? AND id>? ORDER BY id",
                (session_id, after_chunk),
            ).fetchall()
        return StreamTail(r[0], json.loads(r[1]), [(c[0], c[1], c[2]) for c in chunks])

    def clear_stream(self, session_id: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM inflight WHERE session_id=?", (session_id,))
            db.execute("DELETE FROM chunks WHERE session_id=?", (session_id,))

    # -- leases ---------------------------------------------------------------------------

    def get_lease(self, session_id: str) -> Lease | None:
        r = self._db.execute(
            f"SELECT {_LEASE_COLS} FROM leases WHERE session_id=?", (session_id,)
        ).fetchone()
        return None if r is None else _lease(r)

    def _live_lease(
        self, db: sqlite3.Connection, session_id: str, me: Owner, now: float
    ) -> Lease | None:
        """The lease of another process that is still alive, if any."""
        r = db.execute(
            f"SELECT {_LEASE_COLS} FROM leases WHERE session_id=?", (session_id,)
        ).fetchone()
        if r is None:
            return None
        lease = _lease(r)
        if lease.owner.id == me.id or owner_is_dead(lease, me, now):
            return None
        return lease

    def acquire_lease(
        self, session_id: str, owner: Owner, kind: str, turn_id: str | None, now: float
    ) -> Acquired:
        with self._tx() as db:
            r = db.execute(
                f"SELECT {_LEASE_COLS} FROM leases WHERE session_id=?", (session_id,)
            ).fetchone()
            held = None if r is None else _lease(r)
            took_over: Lease | None = None
            if held is not None and held.owner.id != owner.id:
                if not owner_is_dead(held, owner, now):
                    return Acquired(held, mine=False)
                took_over = held
            elif (
                held is None
                and db.execute(
                    "SELECT 1 FROM inflight WHERE session_id=?", (session_id,)
                ).fetchone()
            ):
                # A journal with no lease: written by a process that died (or by a
                # Threadline older than leases). It is ours to recover.
                took_over = Lease(session_id, Owner("", 0, "", 0.0), "turn", None, "", 0.0, False)
            since = _iso(now)
            db.execute(
                f"INSERT OR REPLACE INTO leases({_LEASE_COLS}) VALUES(?,?,?,?,?,?,?,?,?,0)",
                (
                    session_id,
                    owner.id,
                    owner.pid,
                    owner.host,
                    owner.started,
                    kind,
                    turn_id,
                    since,
                    now,
                ),
            )
        lease = Lease(session_id, owner, kind, turn_id, since, now, False)
        return Acquired(lease, mine=True, took_over=took_over)

    def release_lease(self, session_id: str, owner: Owner) -> None:
        with self._tx() as db:
            db.execute(
                "DELETE FROM leases WHERE session_id=? AND owner_id=?", (session_id, owner.id)
            )

    def heartbeat(self, owner: Owner, now: float) -> list[str]:
        with self._tx() as db:
            rows = db.execute(
                "UPDATE leases SET heartbeat=? WHERE owner_id=? RETURNING session_id, interrupt",
                (now, owner.id),
            ).fetchall()
        return [r[0] for r in rows if r[1]]

    def request_interrupt(self, session_id: str) -> Lease | None:
        with self._tx() as db:
            r = db.execute(
                f"UPDATE leases SET interrupt=1 WHERE session_id=? RETURNING {_LEASE_COLS}",
                (session_id,),
            ).fetchone()
        return None if r is None else _lease(r)


def _disk_full(exc: sqlite3.Error, folder: Path) -> bool:
    if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(exc):
        return True
    try:
        return shutil.disk_usage(folder).free < 64 * 1024
    except OSError:
        return False
