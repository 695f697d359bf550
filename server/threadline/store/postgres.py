"""PostgreSQL session store: one database shared by a team's sidecars on many machines.

The same contract as `store.sqlite.EventStore` (see `store.base`): appends at an
expected sequence, leases that any machine can take over once the owner's heartbeat
is stale, forks as one row, and the stream journal. What differs is how other
writers are noticed and what happens when the server goes away:

- **Change feed.** Every write transaction sends a small ``NOTIFY`` (this store's
  instance id, nothing else; text stays in the tables). A dedicated ``LISTEN``
  connection counts the notifications of other instances; `change_token` does one
  round trip on it, so any commit that returned before the call is counted (the
  server delivers pending notifications before it answers), which is what keeps every
  read fresh, and what a watcher on another machine polls to stream a remote turn.
- **Outages.** Statements run on a `psycopg_pool` pool and are retried on a fresh
  connection with backoff for a bounded time, then fail with `StoreError`; nothing
  that failed is reported as done. Journal chunks of an answer being streamed do not
  wait: while the server is unreachable they stay in memory (bounded by
  `CHUNK_BUFFER_BYTES`) and are written, in order, by the next write that gets
  through, so the turn keeps streaming and what was shown stays recoverable.
- **Secrets.** The URL's password never appears in a message: errors name the
  server as `describe(url)` does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg import Connection, Notify
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

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
from .codec import dumps, loads, safe_text
from .owners import owner_is_dead

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
"""1: sessions, events, messages, journal, leases (the SQLite store's schema 2)."""

CHANNEL = "threadline"
CONNECT_TIMEOUT = 3
"""Seconds a connection attempt waits, so an unreachable server fails start-up fast."""

DRAIN_SECONDS = 1.0
"""How often notifications are read when no request asks for the change token."""

CHUNK_BUFFER_BYTES = 4 * 1024 * 1024
"""Journal text held in memory while the server is unreachable; past it the turn fails."""

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tl_sessions(
    id TEXT PRIMARY KEY,
    parent_id TEXT,
    base_id TEXT,
    base_seq BIGINT NOT NULL DEFAULT 0,
    base_count BIGINT NOT NULL DEFAULT 0,
    forked_at_message_id TEXT,
    cwd TEXT NOT NULL,
    title TEXT,
    config TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    own_count BIGINT NOT NULL DEFAULT 0,
    last_seq BIGINT NOT NULL DEFAULT 0,
    deleted BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX IF NOT EXISTS tl_sessions_base ON tl_sessions(base_id);
CREATE INDEX IF NOT EXISTS tl_sessions_updated ON tl_sessions(updated_at);
CREATE TABLE IF NOT EXISTS tl_events(
    session_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY(session_id, seq)
);
CREATE TABLE IF NOT EXISTS tl_messages(
    message_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    ordinal BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS tl_messages_session ON tl_messages(session_id, ordinal);
CREATE TABLE IF NOT EXISTS tl_inflight(
    session_id TEXT PRIMARY KEY,
    message_id TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tl_chunks(
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT NOT NULL,
    block TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tl_chunks_session ON tl_chunks(session_id, id);
CREATE TABLE IF NOT EXISTS tl_leases(
    session_id TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    started DOUBLE PRECISION NOT NULL,
    kind TEXT NOT NULL,
    turn_id TEXT,
    since TEXT NOT NULL,
    heartbeat DOUBLE PRECISION NOT NULL,
    interrupt BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX IF NOT EXISTS tl_leases_owner ON tl_leases(owner_id);
"""

_SCHEMA_LOCK = 7_466_726_101  # pg_advisory_xact_lock key: one schema set-up at a time

_COLS = (
    "id, parent_id, base_id, base_seq, base_count, forked_at_message_id, cwd, title, "
    "config, created_at, updated_at, own_count, last_seq, deleted"
)
_LEASE_COLS = "session_id, owner_id, pid, host, started, kind, turn_id, since, heartbeat, interrupt"


class StoreUnavailable(StoreError):
    """The server could not be reached (as opposed to a statement it refused)."""


def describe(url: str) -> str:
    """The server a URL names, for people: ``user@host:port/db``, never the password."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "an unparsable PostgreSQL URL"
    host = str(params.get("host") or "localhost")
    port = str(params.get("port") or "5432")
    user = str(params.get("user") or "")
    db = str(params.get("dbname") or user)
    return f"{user + '@' if user else ''}{host}:{port}/{db}"


def _redact(message: str, url: str) -> str:
    """A driver message with the password (if the URL has one) masked."""
    with contextlib.suppress(psycopg.ProgrammingError):
        password = conninfo_to_dict(url).get("password")
        if password:
            message = message.replace(str(password), "***")
    return message.replace(url, describe(url)).strip().splitlines()[0] if message else message


def _pgtext(value: str | None) -> str | None:
    """Text PostgreSQL accepts: lone surrogates replaced, and NUL (never in text columns)."""
    value = safe_text(value)
    return value.replace("\x00", "\ufffd") if value is not None and "\x00" in value else value


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


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def retry_seconds() -> float:
    """How long a statement keeps retrying through an outage before it fails."""
    try:
        return max(0.0, float(os.environ.get("THREADLINE_STORE_RETRY", "5")))
    except ValueError:
        return 5.0


class PostgresStore:
    """`store.base.SessionStore` on a PostgreSQL database shared by many machines."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = describe(url)
        self._instance = uuid.uuid4().hex[:16]
        self._conninfo = self._with_defaults(url)
        self._seen = 0
        self._chunks: list[tuple[str, str, str]] = []
        """Journal chunks (session, block, text) waiting for the server to come back."""
        self._chunk_bytes = 0
        self._down_since: float | None = None
        self._next_try = 0.0
        """While the server is down, journal writes are not tried again before this."""
        self._backoff = 0.1
        self._next_listen = 0.0
        self._listen = self._connect()
        try:
            self._setup(self._listen)
            self._listen.add_notify_handler(self._on_notify)
            self._listen.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error as exc:
            self._listen.close()
            raise self._error("cannot set up the session store on", exc) from exc
        except BaseException:
            self._listen.close()
            raise
        self._pool = ConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=4,
            kwargs={"autocommit": True},
            timeout=CONNECT_TIMEOUT,
            reconnect_timeout=0,
            open=True,
            name="threadline",
        )
        self._listen_lock = threading.Lock()
        self._closed = threading.Event()
        threading.Thread(target=self._drain, name="threadline-listen", daemon=True).start()

    # -- connections -------------------------------------------------------------------

    def _with_defaults(self, url: str) -> str:
        try:
            params = conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise StoreError(f"THREADLINE_STORE is not a PostgreSQL URL ({self.where})") from exc
        params.setdefault("connect_timeout", CONNECT_TIMEOUT)
        params.setdefault("application_name", "threadline")
        return make_conninfo("", **params)

    def _connect(self) -> Connection[tuple[Any, ...]]:
        try:
            return psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise self._error("cannot reach the session store at", exc) from exc

    def _lost(self, exc: BaseException) -> StoreUnavailable:
        return StoreUnavailable(
            f"lost the session store at {self.where}: {_redact(str(exc), self.url)}",
            reason="unreachable",
            where=self.where,
        )

    def _error(self, what: str, exc: BaseException) -> StoreError:
        reason = "unreachable" if isinstance(exc, psycopg.OperationalError) else "store_error"
        return StoreError(
            f"{what} {self.where}: {_redact(str(exc), self.url)}", reason=reason, where=self.where
        )

    def _setup(self, conn: Connection[tuple[Any, ...]]) -> None:
        """Create the schema on first use; refuse a schema newer than this code knows
        before writing anything."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            exists = conn.execute("SELECT to_regclass('tl_meta')").fetchone()
            if exists is not None and exists[0] is not None:
                r = conn.execute("SELECT value FROM tl_meta WHERE key='schema_version'").fetchone()
                if r is not None and int(r[0]) > SCHEMA_VERSION:
                    raise StoreError(
                        f"the session store at {self.where} was written by a newer Threadline "
                        f"(schema {r[0]}, this one knows {SCHEMA_VERSION}); upgrade Threadline "
                        "or point THREADLINE_STORE at another database"
                    )
                if r is not None and int(r[0]) == SCHEMA_VERSION:
                    return
            conn.execute("CREATE TABLE IF NOT EXISTS tl_meta(key TEXT PRIMARY KEY, value TEXT)")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)  # pyright: ignore[reportArgumentType]
            conn.execute(
                "INSERT INTO tl_meta(key, value) VALUES('schema_version', %s) "
                "ON CONFLICT(key) DO UPDATE SET value=EXCLUDED.value",
                (str(SCHEMA_VERSION),),
            )

    def _on_notify(self, n: Notify) -> None:
        if n.payload != self._instance:
            self._seen += 1

    def _run(
        self,
        work: Callable[[Connection[tuple[Any, ...]]], T],
        *,
        write: bool,
        tx: bool = True,
        patience: float | None = None,
    ) -> T:
        """Run ``work`` in one transaction (``tx=False``: a single read statement, which
        needs none and saves two round trips), retrying on a fresh connection with
        backoff while the server is unreachable, for ``patience`` seconds (default
        `retry_seconds`; 0: one attempt). Writes first flush journal chunks that
        waited, then notify the other instances."""
        deadline = time.monotonic() + (retry_seconds() if patience is None else patience)
        delay = 0.05
        while True:
            try:
                flushed = 0
                wait = max(0.2, min(CONNECT_TIMEOUT, deadline - time.monotonic()))
                with self._pool.connection(timeout=wait) as conn:
                    if not tx:
                        return work(conn)
                    with conn.transaction():
                        if write:
                            flushed = self._write_waiting(conn)
                        result = work(conn)
                        if write:
                            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self._instance))
                self._written(flushed)
                return result
            except (psycopg.OperationalError, PoolTimeout) as exc:
                if self._down_since is None:
                    self._down_since = time.monotonic()
                if time.monotonic() + delay > deadline:
                    raise self._lost(exc) from exc
                log.warning("session store unreachable, retrying: %s", _redact(str(exc), self.url))
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
            except psycopg.Error as exc:
                raise self._error("the session store failed at", exc) from exc

    def _read(self, work: Callable[[Connection[tuple[Any, ...]]], T]) -> T:
        """One statement (autocommit: its own snapshot)."""
        return self._run(work, write=False, tx=False)

    def _read_snapshot(self, work: Callable[[Connection[tuple[Any, ...]]], T]) -> T:
        """Several statements that must see one snapshot (REPEATABLE READ)."""

        def snap(conn: Connection[tuple[Any, ...]]) -> T:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            return work(conn)

        return self._run(snap, write=False)

    def _write(self, work: Callable[[Connection[tuple[Any, ...]]], T]) -> T:
        return self._run(work, write=True)

    def _write_waiting(self, conn: Connection[tuple[Any, ...]]) -> int:
        """Insert the journal chunks that waited; returns how many (dropped from memory
        by `_written` only once the transaction committed)."""
        if not self._chunks:
            return 0
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO tl_chunks(session_id, block, text) VALUES(%s,%s,%s)", self._chunks
            )
        return len(self._chunks)

    def _written(self, flushed: int) -> None:
        self._down_since = None
        if flushed:
            del self._chunks[:flushed]
            self._chunk_bytes = sum(len(c[2]) for c in self._chunks)

    # -- change feed ---------------------------------------------------------------------

    def change_token(self) -> int:
        with self._listen_lock:
            try:
                # One round trip: the server sends every notification committed before
                # it answers, and the handler counts those of other instances.
                self._listen.execute("SELECT 1")
            except psycopg.Error:
                # Notifications may have been missed while the connection was down:
                # report a change so readers look, and listen again when it is back.
                self._seen += 1
                if time.monotonic() >= self._next_listen:
                    self._next_listen = time.monotonic() + 1.0
                    self._relisten()
            return self._seen

    def _drain(self) -> None:
        """Read notifications even when nobody asks: an idle sidecar that never read
        its socket would hold back the server's notification queue for everyone."""
        while not self._closed.wait(DRAIN_SECONDS):
            self.change_token()

    def _relisten(self) -> None:
        with contextlib.suppress(psycopg.Error):
            self._listen.close()
        try:
            conn = psycopg.connect(self._conninfo, autocommit=True)
            conn.add_notify_handler(self._on_notify)
            conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error:
            return  # still down; the next call tries again
        self._listen = conn

    def close(self) -> None:
        self._closed.set()
        if self._chunks:
            with contextlib.suppress(StoreError):
                self._write(lambda conn: None)
        self._pool.close()
        with self._listen_lock, contextlib.suppress(psycopg.Error):
            self._listen.close()

    # -- sessions ------------------------------------------------------------------------

    def create_session(
        self, session_id: str, cwd: str, config: dict[str, Any], now: str, title: str | None = None
    ) -> SessionRow:
        def work(conn: Connection[tuple[Any, ...]]) -> None:
            conn.execute(
                "INSERT INTO tl_sessions(id, cwd, title, config, created_at, updated_at) "
                "VALUES(%s,%s,%s,%s,%s,%s)",
                (session_id, _pgtext(cwd), _pgtext(title), dumps(config), now, now),
            )

        self._write(work)
        row = self.get_session(session_id)
        assert row is not None
        return row

    def get_session(self, session_id: str, include_deleted: bool = False) -> SessionRow | None:
        r = self._read(
            lambda conn: conn.execute(
                f"SELECT {_COLS} FROM tl_sessions WHERE id=%s", (session_id,)
            ).fetchone()
        )
        if r is None:
            return None
        row = _row(r)
        if row.deleted and not include_deleted:
            return None
        return row

    def list_session_ids(self, cwd: str | None = None) -> list[str]:
        def work(conn: Connection[tuple[Any, ...]]) -> list[str]:
            if cwd is None:
                cur = conn.execute(
                    "SELECT id FROM tl_sessions WHERE NOT deleted ORDER BY updated_at DESC, id DESC"
                )
            else:
                cur = conn.execute(
                    "SELECT id FROM tl_sessions WHERE NOT deleted AND cwd=%s "
                    "ORDER BY updated_at DESC, id DESC",
                    (_pgtext(cwd),),
                )
            return [r[0] for r in cur]

        return self._read(work)

    def get_sessions(self, session_ids: Sequence[str]) -> dict[str, SessionRow]:
        def work(conn: Connection[tuple[Any, ...]]) -> dict[str, SessionRow]:
            cur = conn.execute(
                f"SELECT {_COLS} FROM tl_sessions WHERE NOT deleted AND id = ANY(%s)",
                (list(session_ids),),
            )
            return {row.id: row for row in map(_row, cur)}

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
            sets.append("title=%s")
            args.append(_pgtext(title))
        if config is not None:
            sets.append("config=%s")
            args.append(dumps(config))
        if now is not None:
            sets.append("updated_at=%s")
            args.append(now)
        if not sets:
            return
        sql = f"UPDATE tl_sessions SET {', '.join(sets)} WHERE id=%s"
        self._write(lambda conn: conn.execute(sql, (*args, session_id)))  # pyright: ignore[reportArgumentType]

    def delete_session(
        self, session_id: str, owner: Owner | None = None, now: float | None = None
    ) -> Lease | None:
        def work(conn: Connection[tuple[Any, ...]]) -> Lease | None:
            self._lock(conn, session_id)
            if owner is not None:
                held = self._live_lease(conn, session_id, owner, now or 0.0)
                if held is not None:
                    return held
            conn.execute("UPDATE tl_sessions SET deleted=TRUE WHERE id=%s", (session_id,))
            conn.execute("DELETE FROM tl_leases WHERE session_id=%s", (session_id,))
            self._collect(conn, session_id)
            return None

        return self._write(work)

    def _collect(self, conn: Connection[tuple[Any, ...]], session_id: str) -> None:
        """Drop a deleted session's rows once no fork reads them, then its bases'."""
        while True:
            r = conn.execute(
                "SELECT deleted, base_id FROM tl_sessions WHERE id=%s FOR UPDATE", (session_id,)
            ).fetchone()
            if r is None or not r[0]:
                return
            if conn.execute(
                "SELECT 1 FROM tl_sessions WHERE base_id=%s LIMIT 1", (session_id,)
            ).fetchone():
                return
            base_id: str | None = r[1]
            for table in ("tl_events", "tl_messages", "tl_chunks", "tl_inflight"):
                conn.execute(f"DELETE FROM {table} WHERE session_id=%s", (session_id,))  # pyright: ignore[reportArgumentType]
            conn.execute("DELETE FROM tl_sessions WHERE id=%s", (session_id,))
            if base_id is None:
                return
            session_id = base_id

    @staticmethod
    def _lock(conn: Connection[tuple[Any, ...]], session_id: str) -> None:
        """Serialize lease and delete decisions on one session across machines."""
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (session_id,))

    # -- forks ---------------------------------------------------------------------------

    def locate_message(self, session_id: str, message_id: str) -> tuple[str, int, int] | None:
        r = self._read(
            lambda conn: conn.execute(
                "SELECT session_id, seq, ordinal FROM tl_messages WHERE message_id=%s",
                (message_id,),
            ).fetchone()
        )
        if r is None:
            return None
        origin, seq, ordinal = str(r[0]), int(r[1]), int(r[2])
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
        sid: str | None = session_id
        limit: int | None = None
        while sid is not None:
            sql = "SELECT message_id FROM tl_messages WHERE session_id=%s"
            args: list[Any] = [sid]
            if limit is not None:
                sql += " AND seq<=%s"
                args.append(limit)
            sql += " ORDER BY ordinal DESC LIMIT 1"
            r = self._read(lambda conn, q=sql, a=args: conn.execute(q, a).fetchone())  # pyright: ignore[reportArgumentType]
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
        def work(conn: Connection[tuple[Any, ...]]) -> None:
            conn.execute(
                "INSERT INTO tl_sessions(id, parent_id, base_id, base_seq, base_count, "
                "forked_at_message_id, cwd, title, config, created_at, updated_at) "
                "VALUES(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                (
                    new_id,
                    parent.id,
                    base_id,
                    base_seq,
                    base_count,
                    forked_at_message_id,
                    _pgtext(cwd),
                    _pgtext(title) if title is not None else parent.title,
                    dumps(parent.config),
                    now,
                    now,
                ),
            )

        self._write(work)
        row = self.get_session(new_id)
        assert row is not None
        return row

    # -- events --------------------------------------------------------------------------

    def append(
        self,
        session_id: str,
        events: Iterable[NewEvent],
        now: str,
        end_stream: bool = False,
        *,
        expected_seq: int | None = None,
    ) -> int:
        batch = list(events)

        def work(conn: Connection[tuple[Any, ...]]) -> int:
            r = conn.execute(
                "SELECT last_seq, base_count + own_count FROM tl_sessions "
                "WHERE id=%s AND NOT deleted FOR UPDATE",
                (session_id,),
            ).fetchone()
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
            with conn.cursor() as cur:
                if rows:
                    cur.executemany(
                        "INSERT INTO tl_events(session_id, seq, kind, payload) VALUES(%s,%s,%s,%s)",
                        rows,
                    )
                if messages:
                    cur.executemany(
                        "INSERT INTO tl_messages(message_id, session_id, seq, ordinal) "
                        "VALUES(%s,%s,%s,%s)",
                        messages,
                    )
            conn.execute(
                "UPDATE tl_sessions SET last_seq=%s, own_count=own_count+%s, updated_at=%s "
                "WHERE id=%s",
                (seq, len(messages), now, session_id),
            )
            if end_stream:
                conn.execute("DELETE FROM tl_inflight WHERE session_id=%s", (session_id,))
                conn.execute("DELETE FROM tl_chunks WHERE session_id=%s", (session_id,))
            return seq

        return self._write(work)

    def load_events(self, session_id: str, after_seq: int | None = None) -> list[StoredEvent]:
        def own(conn: Connection[tuple[Any, ...]]) -> list[StoredEvent]:
            cur = conn.execute(
                "SELECT seq, kind, payload FROM tl_events WHERE session_id=%s AND seq>%s "
                "ORDER BY seq",
                (session_id, after_seq),
            )
            return [StoredEvent(session_id, q, k, loads(p)) for q, k, p in cur]

        if after_seq is not None:
            return self._read(own)
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

        def work(conn: Connection[tuple[Any, ...]]) -> list[StoredEvent]:
            out: list[StoredEvent] = []
            for sid, lim in reversed(chain):
                cur = conn.execute(
                    "SELECT seq, kind, payload FROM tl_events WHERE session_id=%s AND seq<=%s "
                    "ORDER BY seq",
                    (sid, lim if lim is not None else 2**62),
                )
                out.extend(StoredEvent(sid, s, k, loads(p)) for s, k, p in cur)
            return out

        return self._read(work)

    # -- streaming journal ---------------------------------------------------------------

    def begin_stream(self, session_id: str, message_id: str, meta: dict[str, Any]) -> None:
        def work(conn: Connection[tuple[Any, ...]]) -> None:
            conn.execute("DELETE FROM tl_chunks WHERE session_id=%s", (session_id,))
            conn.execute(
                "INSERT INTO tl_inflight(session_id, message_id, payload) VALUES(%s,%s,%s) "
                "ON CONFLICT(session_id) DO UPDATE SET message_id=EXCLUDED.message_id, "
                "payload=EXCLUDED.payload",
                (session_id, message_id, dumps(meta)),
            )

        self._write(work)

    def append_chunks(self, session_id: str, chunks: Sequence[tuple[str, str]]) -> None:
        """Journal a burst; while the server is unreachable the burst waits in memory
        (the turn goes on streaming) and is written by the next write that succeeds."""
        if not chunks:
            return
        for block, text in chunks:
            clean = _pgtext(text) or ""
            self._chunks.append((session_id, block, clean))
            self._chunk_bytes += len(clean)
        if self._down_since is not None and self._chunk_bytes > CHUNK_BUFFER_BYTES:
            raise StoreError(
                f"the session store at {self.where} has been unreachable for "
                f"{time.monotonic() - self._down_since:.0f} s and the answer outgrew the "
                f"{CHUNK_BUFFER_BYTES // 1024} KiB kept in memory meanwhile; what was shown "
                "is written when the store is back"
            )
        self._flush_waiting()

    def _flush_waiting(self) -> None:
        """Write the chunks that wait, in one attempt; while the server is down, at most
        once per backoff interval, so a streaming turn does not stall on every burst."""
        if not self._chunks or time.monotonic() < self._next_try:
            return
        try:
            self._journal_now()
            self._backoff = 0.1
        except StoreUnavailable as exc:
            self._next_try = time.monotonic() + self._backoff
            self._backoff = min(self._backoff * 2, 5.0)
            log.warning("journal chunks wait in memory: %s", exc)
        except StoreError:
            # Not an outage: the server refused them. The turn fails with this error;
            # they must not fail every later write too.
            self._chunks.clear()
            self._chunk_bytes = 0
            raise

    def _journal_now(self) -> None:
        """The waiting chunks and the notification in one statement, one round trip:
        the hot path of a streaming turn (a data-modifying CTE runs whether or not
        the outer query reads it; the notification leaves on its commit)."""
        batch = list(self._chunks)

        def work(conn: Connection[tuple[Any, ...]]) -> None:
            conn.execute(
                "WITH ins AS (INSERT INTO tl_chunks(session_id, block, text) "
                "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[])) "
                "SELECT pg_notify(%s, %s)",
                (
                    [c[0] for c in batch],
                    [c[1] for c in batch],
                    [c[2] for c in batch],
                    CHANNEL,
                    self._instance,
                ),
            )

        self._run(work, write=False, tx=False, patience=0)
        self._written(len(batch))

    def inflight_streams(self) -> list[InflightStream]:
        ids = self._read(
            lambda conn: [r[0] for r in conn.execute("SELECT session_id FROM tl_inflight")]
        )
        out: list[InflightStream] = []
        for sid in ids:
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
        def work(conn: Connection[tuple[Any, ...]]) -> StreamTail:
            r = conn.execute(
                "SELECT message_id, payload FROM tl_inflight WHERE session_id=%s", (session_id,)
            ).fetchone()
            if r is None:
                return StreamTail(None, {}, [])
            chunks = conn.execute(
                "SELECT id, block, text FROM tl_chunks WHERE session_id=%s AND id>%s ORDER BY id",
                (session_id, after_chunk),
            ).fetchall()
            return StreamTail(r[0], json.loads(r[1]), [(c[0], c[1], c[2]) for c in chunks])

        # The header and the chunks belong to one snapshot.
        return self._read_snapshot(work)

    def clear_stream(self, session_id: str) -> None:
        def work(conn: Connection[tuple[Any, ...]]) -> None:
            conn.execute("DELETE FROM tl_inflight WHERE session_id=%s", (session_id,))
            conn.execute("DELETE FROM tl_chunks WHERE session_id=%s", (session_id,))

        self._chunks = [c for c in self._chunks if c[0] != session_id]
        self._chunk_bytes = sum(len(c[2]) for c in self._chunks)
        self._write(work)

    # -- leases --------------------------------------------------------------------------

    def get_lease(self, session_id: str) -> Lease | None:
        r = self._read(
            lambda conn: conn.execute(
                f"SELECT {_LEASE_COLS} FROM tl_leases WHERE session_id=%s", (session_id,)
            ).fetchone()
        )
        return None if r is None else _lease(r)

    def _live_lease(
        self, conn: Connection[tuple[Any, ...]], session_id: str, me: Owner, now: float
    ) -> Lease | None:
        r = conn.execute(
            f"SELECT {_LEASE_COLS} FROM tl_leases WHERE session_id=%s", (session_id,)
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
        since = _iso(now)

        def work(conn: Connection[tuple[Any, ...]]) -> Acquired:
            self._lock(conn, session_id)
            r = conn.execute(
                f"SELECT {_LEASE_COLS} FROM tl_leases WHERE session_id=%s", (session_id,)
            ).fetchone()
            held = None if r is None else _lease(r)
            took_over: Lease | None = None
            if held is not None and held.owner.id != owner.id:
                if not owner_is_dead(held, owner, now):
                    return Acquired(held, mine=False)
                took_over = held
            elif (
                held is None
                and conn.execute(
                    "SELECT 1 FROM tl_inflight WHERE session_id=%s", (session_id,)
                ).fetchone()
            ):
                # A journal with no lease: its writer died before taking one or after
                # losing it. It is ours to recover.
                took_over = Lease(session_id, Owner("", 0, "", 0.0), "turn", None, "", 0.0, False)
            conn.execute(
                f"INSERT INTO tl_leases({_LEASE_COLS}) VALUES(%s,%s,%s,%s,%s,%s,%s,%s,%s,FALSE) "
                "ON CONFLICT(session_id) DO UPDATE SET owner_id=EXCLUDED.owner_id, "
                "pid=EXCLUDED.pid, host=EXCLUDED.host, started=EXCLUDED.started, "
                "kind=EXCLUDED.kind, turn_id=EXCLUDED.turn_id, since=EXCLUDED.since, "
                "heartbeat=EXCLUDED.heartbeat, interrupt=FALSE",
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

        return self._write(work)

    def release_lease(self, session_id: str, owner: Owner) -> None:
        self._write(
            lambda conn: conn.execute(
                "DELETE FROM tl_leases WHERE session_id=%s AND owner_id=%s",
                (session_id, owner.id),
            )
        )

    def heartbeat(self, owner: Owner, now: float) -> list[str]:
        # Not a change others need to fold in: no notification.
        # One attempt: the next beat comes in 0.3 s; retrying would stall the loop.
        rows = self._run(
            lambda conn: conn.execute(
                "UPDATE tl_leases SET heartbeat=%s WHERE owner_id=%s RETURNING session_id, "
                "interrupt",
                (now, owner.id),
            ).fetchall(),
            write=False,
            patience=0,
        )
        self._flush_waiting()
        return [r[0] for r in rows if r[1]]

    def request_interrupt(self, session_id: str) -> Lease | None:
        r = self._write(
            lambda conn: conn.execute(
                f"UPDATE tl_leases SET interrupt=TRUE WHERE session_id=%s RETURNING {_LEASE_COLS}",
                (session_id,),
            ).fetchone()
        )
        return None if r is None else _lease(r)

    # -- import (threadline store migrate) -----------------------------------------------

    def import_session(self, dump: SessionDump) -> str:
        """Copy a session in one transaction; idempotent. Returns ``copied`` (new),
        ``extended`` (events the copy here lacked were added) or ``kept`` (this store
        already has all of them, or went on further)."""
        row = dump.row

        def work(conn: Connection[tuple[Any, ...]]) -> str:
            self._lock(conn, row.id)
            have = conn.execute(
                "SELECT last_seq FROM tl_sessions WHERE id=%s FOR UPDATE", (row.id,)
            ).fetchone()
            after = -1 if have is None else int(have[0])
            if have is not None and after >= row.last_seq:
                return "kept"
            if have is None:
                conn.execute(
                    f"INSERT INTO tl_sessions({_COLS}) "
                    "VALUES(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    (
                        row.id,
                        row.parent_id,
                        row.base_id,
                        row.base_seq,
                        row.base_count,
                        row.forked_at_message_id,
                        _pgtext(row.cwd),
                        _pgtext(row.title),
                        dumps(row.config),
                        row.created_at,
                        row.updated_at,
                        row.own_count,
                        row.last_seq,
                        row.deleted,
                    ),
                )
            else:
                conn.execute(
                    "UPDATE tl_sessions SET last_seq=%s, own_count=%s, updated_at=%s, "
                    "title=%s WHERE id=%s",
                    (row.last_seq, row.own_count, row.updated_at, _pgtext(row.title), row.id),
                )
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO tl_events(session_id, seq, kind, payload) VALUES(%s,%s,%s,%s)",
                    [
                        (row.id, e.seq, e.kind, dumps(e.payload))
                        for e in dump.events
                        if e.seq > after
                    ],
                )
                cur.executemany(
                    "INSERT INTO tl_messages(message_id, session_id, seq, ordinal) "
                    "VALUES(%s,%s,%s,%s)",
                    [(m, row.id, q, o) for m, q, o in dump.messages if q > after],
                )
            return "copied" if have is None else "extended"

        return self._write(work)

    def stored_counts(self, session_id: str, upto_seq: int) -> tuple[int, int]:
        """(events, messages) of a session's own up to ``upto_seq``: what a migration
        verifies against its source."""

        def work(conn: Connection[tuple[Any, ...]]) -> tuple[int, int]:
            ev = conn.execute(
                "SELECT count(*) FROM tl_events WHERE session_id=%s AND seq<=%s",
                (session_id, upto_seq),
            ).fetchone()
            ms = conn.execute(
                "SELECT count(*) FROM tl_messages WHERE session_id=%s AND seq<=%s",
                (session_id, upto_seq),
            ).fetchone()
            return (int(ev[0]) if ev else 0, int(ms[0]) if ms else 0)

        return self._read_snapshot(work)
