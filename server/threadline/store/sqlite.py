"""SQLite event store: the one durable source of truth for every session.

A session is an append-only log of mutation events. A fork is a single row that
points at a *base* session and a sequence number in it: reading the fork reads the
base's prefix and then the fork's own events, so forking costs the same for a
10-message session as for a 100,000-message one. Streaming deltas of an answer in
flight are journaled separately so a crash mid-answer can be recovered as a
truncated message.

All access happens on the event-loop thread through one connection; commits are
cheap in WAL mode with ``synchronous=NORMAL`` (durable across a process crash, the
failure an editor sidecar actually sees).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import stat
from collections.abc import Generator, Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1

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
"""


class StoreError(Exception):
    """The store could not be opened or read; the message says what to do."""


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
class NewEvent:
    """An event to append; ``message_ids`` lists the messages it creates, in order."""

    kind: str
    payload: dict[str, Any]
    message_ids: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class InflightStream:
    session_id: str
    message_id: str
    meta: dict[str, Any]
    text: str
    thought: str


_COLS = (
    "id, parent_id, base_id, base_seq, base_count, forked_at_message_id, cwd, title, "
    "config, created_at, updated_at, own_count, last_seq, deleted"
)


def _text(value: str | None) -> str | None:
    """A str SQLite can bind: lone surrogates (valid in JSON, not in UTF-8) replaced."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return value


def _loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # written by the stdlib fallback (big integers)
        return json.loads(text)


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


def _dumps(obj: Any) -> str:
    try:
        return orjson.dumps(obj).decode()
    except TypeError:  # beyond orjson: integers over 64 bits, lone surrogates
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":"))


class EventStore:
    """Append-only session logs with copy-on-write forks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(path.parent, 0o700)
        old_umask = os.umask(0o077)
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=OFF")
            self._check_integrity()
            self._db.executescript(_SCHEMA)
            self._db.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"cannot open the session store at {path}: {exc}. Move the file aside "
                "(sessions in it are not deleted) or set THREADLINE_HOME to another folder."
            ) from exc
        finally:
            os.umask(old_umask)
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(path) + suffix)
            if p.exists():
                os.chmod(p, stat.S_IRUSR | stat.S_IWUSR)

    def _check_integrity(self) -> None:
        row = self._db.execute("PRAGMA quick_check").fetchone()
        if row is None or row[0] != "ok":
            raise sqlite3.DatabaseError(f"integrity check failed: {row[0] if row else '?'}")

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        self._db.close()

    @contextmanager
    def _tx(self) -> Generator[sqlite3.Connection, None, None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        else:
            self._db.execute("COMMIT")

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

    def list_sessions(
        self, cwd: str | None = None, before: str | None = None, limit: int = 50
    ) -> list[SessionRow]:
        """Newest first; ``before`` is an ``updated_at|id`` cursor from the previous page."""
        sql = f"SELECT {_COLS} FROM sessions WHERE deleted=0"
        args: list[Any] = []
        if cwd is not None:
            sql += " AND cwd=?"
            args.append(_text(cwd))  # stored the same way, so a lone surrogate matches
        if before is not None:
            ts, _, sid = (_text(before) or "").partition("|")
            sql += " AND (updated_at < ? OR (updated_at = ? AND id < ?))"
            args += [ts, ts, sid]
        sql += " ORDER BY updated_at DESC, id DESC LIMIT ?"
        args.append(limit)
        return [_row(r) for r in self._db.execute(sql, args)]

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

    def delete_session(self, session_id: str) -> None:
        """Hide a session; its events go only once no fork still reads them."""
        with self._tx() as db:
            db.execute("UPDATE sessions SET deleted=1 WHERE id=?", (session_id,))
            self._collect(db, session_id)

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
                    parent.title,
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
        self, session_id: str, events: Iterable[NewEvent], now: str, end_stream: bool = False
    ) -> int:
        """Append events in one transaction; returns the last sequence number."""
        with self._tx() as db:
            r = db.execute(
                "SELECT last_seq, base_count + own_count FROM sessions WHERE id=?", (session_id,)
            ).fetchone()
            if r is None:
                raise KeyError(session_id)
            seq, ordinal = r[0], r[1]
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

    def load_events(self, session_id: str) -> list[StoredEvent]:
        """The session's logical log: its bases' prefixes, then its own events."""
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
        for sid, mid, payload in self._db.execute(
            "SELECT session_id, message_id, payload FROM inflight"
        ).fetchall():
            text: list[str] = []
            thought: list[str] = []
            for block, t in self._db.execute(
                "SELECT block, text FROM chunks WHERE session_id=? ORDER BY id", (sid,)
            ):
                (thought if block == "thought" else text).append(t)
            out.append(
                InflightStream(sid, mid, json.loads(payload), "".join(text), "".join(thought))
            )
        return out

    def clear_stream(self, session_id: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM inflight WHERE session_id=?", (session_id,))
            db.execute("DELETE FROM chunks WHERE session_id=?", (session_id,))
