"""PostgreSQL session store: one database shared by a team's sidecars on many machines.

The same contract as `store.sqlite.EventStore` (see `store.base`), and the same
operations (`store.sql`): appends at an expected sequence, leases that any machine
can take over once the owner's heartbeat is stale, forks as one row, and the stream
journal. What this module adds is how statements reach the server, how other
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
import logging
import os
import select
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg import Connection, Notify
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus
from psycopg_pool import PoolTimeout

from .base import StoreError
from .catalog import upgrade
from .codec import safe_text
from .pgchanges import HeardChanges, payload
from .pgimport import ImportOps
from .pgpool import open_pool
from .pgwrites import CHANNEL, PgWriteOps
from .schema import tables, upgrade_folds
from .statements import Dialect, Statements

log = logging.getLogger(__name__)

SCHEMA_VERSION = 7
"""1: sessions, events, messages, journal, leases (the SQLite store's schema 2).
2: folds (the SQLite store's schema 3). 3: the catalog (archive, tags, previews, the
``tsvector`` search index; the SQLite store's schema 4). 4: pending prompts
(`store.pending`; the SQLite store's schema 5). 5: blobs and their references
(`store.blobs`; the SQLite store's schema 6). 6: owners, the processes that wait
for prompts they sent (`store.leases`; the SQLite store's schema 7). 7: a kept fold's
replay in a column of its own (``tl_folds.replay``; the SQLite store's schema 8). An
older schema is brought up to this one by running the ``CREATE … IF NOT EXISTS``
statements again and `store.catalog.upgrade`."""

CONNECT_TIMEOUT = 3
"""Seconds a connection attempt waits, so an unreachable server fails start-up fast."""

DRAIN_SECONDS = 1.0
"""How often notifications are read when no request asks for the change token."""

HEAR_SECONDS = 0.02
"""Notifications that arrive together are read together: at most one look this often
(half the feed's poll, `engine.feed.POLL_SECONDS`)."""

CHUNK_BUFFER_BYTES = 4 * 1024 * 1024
"""Journal text held in memory while the server is unreachable; past it the turn fails."""

JOURNAL_WINDOW = 0.02  # `SessionStore.journal_window`: under load, a write per 20 ms

T = TypeVar("T")


_SCHEMA_LOCK = 7_466_726_101  # pg_advisory_xact_lock key: one schema set-up at a time


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


def retry_seconds() -> float:
    """How long a statement keeps retrying through an outage before it fails."""
    try:
        return max(0.0, float(os.environ.get("THREADLINE_STORE_RETRY", "5")))
    except ValueError:
        return 5.0


BEGIN = "BEGIN"
BEGIN_SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ"
COMMIT = "COMMIT"
NOTIFY = "SELECT pg_notify(%s, %s)"


def _roll_back(conn: Connection[tuple[Any, ...]]) -> None:
    """End a transaction that failed or whose work raised, so the connection goes back
    to the pool idle (the pipeline has sent what was queued; nothing of it stays)."""
    if conn.closed or conn.info.transaction_status == TransactionStatus.IDLE:
        return
    with contextlib.suppress(psycopg.Error):
        conn.execute("ROLLBACK")


DIALECT = Dialect(
    prefix="tl_",
    mark="%s",
    row_locks=True,
    text=_pgtext,
    session_lock="SELECT pg_advisory_xact_lock(hashtext(?))",
    fts="tsvector",
    binary_rows=True,
    json_rows=True,
    types={
        "int": "BIGINT",
        "bool": "BOOLEAN",
        "real": "DOUBLE PRECISION",
        "blob": "BYTEA",
        "serial": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
        "norowid": "",
        "tsv": ",\n    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED",
    },
)
"""Tables named ``tl_…`` (the database may be shared with other software); lease and
delete decisions on a session serialized by an advisory lock across machines."""


class PostgresStore(PgWriteOps, ImportOps):
    """`store.base.SessionStore` on a PostgreSQL database shared by many machines."""

    dialect = DIALECT
    journal_window = JOURNAL_WINDOW

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = describe(url)
        self._instance = uuid.uuid4().hex[:16]
        self._conninfo = self._with_defaults(url)
        self._heard = HeardChanges(self._instance)
        self._chunks: list[tuple[str, str, str]] = []
        """Journal chunks (session, block, text) waiting for the server to come back."""
        self._chunk_bytes = 0
        self._down_since: float | None = None
        self._next_try = 0.0
        """While the server is down, journal writes are not tried again before this."""
        self._backoff = 0.1
        self._next_listen = 0.0
        self._listen = self._connect()
        self._pool = open_pool(self._conninfo, CONNECT_TIMEOUT)  # connects during the set-up
        try:
            version = self._setup(self._listen)
            self.keeps_folds = version >= 2 and self._may_use("tl_folds", "folded transcripts")
            self.keeps_replay = version >= 7
            self.catalog = version >= 3 and self._may_use("tl_texts", "search, archive and tags")
            self.keeps_pending = version >= 4 and self._may_use("tl_pending", "prompt queues")
            self.keeps_blobs = version >= 5 and self._may_use("tl_blob_refs", "images")
            self.keeps_owners = version >= 6 and self._may_use(
                "tl_owners", "proofs that a prompt's sender is alive"
            )
            self._listen.add_notify_handler(self._on_notify)
            self._listen.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error as exc:
            self._listen.close()
            self._pool.close()
            raise self._error("cannot set up the session store on", exc) from exc
        except BaseException:
            self._listen.close()
            self._pool.close()
            raise
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

    def _setup(self, conn: Connection[tuple[Any, ...]]) -> int:
        """Create the schema on first use, or bring an older one up to this version;
        refuse a schema newer than this code knows before writing anything. Returns the
        version in effect: an older one when it stays as it is because this role may not
        create tables (a team role, docs/teams.md): the sidecar works on it without what
        the newer versions add (kept folds, the catalog) until a sidecar of the owner
        upgrades it."""
        found: int | None = None
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                exists = conn.execute("SELECT to_regclass('tl_meta')").fetchone()
                if exists is not None and exists[0] is not None:
                    r = conn.execute(
                        "SELECT value FROM tl_meta WHERE key='schema_version'"
                    ).fetchone()
                    found = None if r is None else int(r[0])
                    if found is not None and found > SCHEMA_VERSION:
                        raise StoreError(
                            f"the session store at {self.where} was written by a newer "
                            f"Threadline (schema {found}, this one knows {SCHEMA_VERSION}); "
                            "upgrade Threadline or point THREADLINE_STORE at another database"
                        )
                    if found == SCHEMA_VERSION:
                        return found
                db = Statements(conn, DIALECT)
                for statement in tables(DIALECT):
                    db.run(statement)
                # a store written before the catalog gets its search index built now
                upgrade(db, DIALECT, backfill=found is not None)
                upgrade_folds(db, DIALECT)
                conn.execute(
                    "INSERT INTO tl_meta(key, value) VALUES('schema_version', %s) "
                    "ON CONFLICT(key) DO UPDATE SET value=EXCLUDED.value",
                    (str(SCHEMA_VERSION),),
                )
        except psycopg.errors.InsufficientPrivilege:
            if found is None:
                raise
            log.warning(
                "the session store at %s has schema %d and this role may not upgrade it to "
                "%d; what the newer versions add (kept folds, search, archive, tags) waits "
                "until a sidecar of the tables' owner starts",
                self.where,
                found,
                SCHEMA_VERSION,
            )
            return found
        return SCHEMA_VERSION

    def _may_use(self, table: str, what: str) -> bool:
        """Whether this role may read and write a table: one created by an upgrade
        after the team role's grants (docs/teams.md) needs granting again."""
        r = self._listen.execute(
            "SELECT has_table_privilege(%s, 'SELECT, INSERT, UPDATE, DELETE')", (table,)
        ).fetchone()
        if r is not None and r[0]:
            return True
        log.warning(
            "this role may not use %s in the session store at %s; %s wait until it is "
            "granted (docs/teams.md)",
            table,
            self.where,
            what,
        )
        return False

    def _on_notify(self, n: Notify) -> None:
        self._heard.hear(n.payload)

    def _run(
        self,
        work: Callable[[Connection[tuple[Any, ...]]], T],
        *,
        write: bool,
        tx: bool = True,
        patience: float | None = None,
        snapshot: bool = False,
    ) -> T:
        """Run ``work`` in one transaction (``tx=False``: a single read statement, which
        needs none and saves two round trips), retrying on a fresh connection with
        backoff while the server is unreachable, for ``patience`` seconds (default
        `retry_seconds`; 0: one attempt). Writes first flush journal chunks that
        waited, then notify the other instances. ``snapshot``: a REPEATABLE READ
        transaction, begun as one (no separate ``SET TRANSACTION`` round trip).

        The transaction runs in psycopg's pipeline mode, begun and committed by
        statements of its own (``conn.transaction()`` would sync at its start and end):
        ``BEGIN``, the statements, the notification and ``COMMIT`` are sent without
        waiting, and the connection waits only where the work reads a result and once
        at the end, for the commit. A write that reads nothing first (a title, a lease
        released, the in-flight record) is one round trip instead of five or six;
        appending events (which reads the session's last sequence) two instead of
        eight. Nothing is reported done before the commit's answer arrived."""
        deadline = time.monotonic() + (retry_seconds() if patience is None else patience)
        delay = 0.05
        while True:
            try:
                flushed = 0
                wait = max(0.2, min(CONNECT_TIMEOUT, deadline - time.monotonic()))
                with self._pool.connection(timeout=wait) as conn:
                    if not tx:
                        return work(conn)
                    try:
                        with conn.pipeline():
                            conn.execute(BEGIN_SNAPSHOT if snapshot else BEGIN)
                            if write:
                                flushed = self._write_waiting(conn)
                            result = work(conn)
                            if write:
                                conn.execute(NOTIFY, (CHANNEL, self._instance))
                            conn.execute(COMMIT)
                    except BaseException:
                        _roll_back(conn)
                        raise
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

    # -- the seam (store.sql) ------------------------------------------------------------

    def _read(self, work: Callable[[Statements], T]) -> T:
        """Autocommit: each statement sees the latest commit, and no transaction costs
        two more round trips."""
        return self._run(lambda conn: work(Statements(conn, DIALECT)), write=False, tx=False)

    def _snapshot(self, work: Callable[[Statements], T]) -> T:
        """Several statements in one REPEATABLE READ transaction."""

        return self._run(lambda conn: work(Statements(conn, DIALECT)), write=False, snapshot=True)

    def _glance(self, work: Callable[[Statements], T]) -> T:
        """`_snapshot` in one attempt: an unreachable server fails it at once."""

        return self._run(
            lambda conn: work(Statements(conn, DIALECT)), write=False, patience=0, snapshot=True
        )

    def _glance_one(self, work: Callable[[Statements], T]) -> T:
        """One statement, one attempt, no transaction: one round trip instead of the
        four a transaction with its isolation level costs around it."""
        return self._run(
            lambda conn: work(Statements(conn, DIALECT)), write=False, tx=False, patience=0
        )

    def _write(self, work: Callable[[Statements], T]) -> T:
        return self._run(lambda conn: work(Statements(conn, DIALECT)), write=True)

    def _write_one(self, work: Callable[[Statements], T]) -> T:
        if self._chunks:
            return self._write(work)
        result = self._run(lambda conn: work(Statements(conn, DIALECT)), write=False, tx=False)
        self._written(0)
        return result

    def _quiet(self, work: Callable[[Statements], T]) -> T:
        """Not a change others fold in: no notification. One attempt: the next beat
        comes in 0.3 s (a kept fold is only a cache), and retrying would stall the
        loop. Journal chunks that wait for the server are tried again here too."""
        result = self._run(lambda conn: work(Statements(conn, DIALECT)), write=False, patience=0)
        self._flush_waiting()
        return result

    def _quiet_one(self, work: Callable[[Statements], T]) -> T:
        """`_quiet` as one statement in autocommit: one round trip instead of two."""
        result = self._run(
            lambda conn: work(Statements(conn, DIALECT)), write=False, tx=False, patience=0
        )
        self._flush_waiting()
        return result

    def _aside(self, work: Callable[[Statements], None]) -> None:
        """One attempt on a pooled connection (the pool is thread-safe); no notification
        and no journal flush, which belong to the event loop's writes."""
        with self._pool.connection(timeout=CONNECT_TIMEOUT) as conn, conn.transaction():
            work(Statements(conn, DIALECT))

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
                self._heard.missed()
                if time.monotonic() >= self._next_listen:
                    self._next_listen = time.monotonic() + 1.0
                    self._relisten()
            return self._heard.token

    def peek_token(self) -> int:
        return self._heard.token

    def changed_since(self, token: int) -> frozenset[str] | None:
        with self._listen_lock:
            return self._heard.since(token)

    def _drain(self) -> None:
        """Read notifications as they arrive, so `peek_token` is current without a
        round trip (the feed that shows windows other processes' changes polls it 20
        times a second: on the event loop, as a ``SELECT 1`` each, that was one
        round trip in every few a streaming sidecar waited for). Also when nobody
        asks: an idle sidecar that never read its socket would hold back the server's
        notification queue for everyone. With nothing heard for `DRAIN_SECONDS`, one
        `change_token` round trip finds a connection that went away."""
        while not self._closed.is_set():
            try:
                ready, _, _ = select.select([self._listen.fileno()], [], [], DRAIN_SECONDS)
            except (OSError, ValueError, psycopg.Error):
                ready = []  # closed under us: change_token listens again
            if self._closed.is_set():
                return
            if not ready:
                self.change_token()
                continue
            if self._hear():
                # Read them in batches: a busy team store notifies hundreds of times
                # a second, and waking for each costs this process CPU (and the event
                # loop the GIL) for nothing the feed's next poll would not see.
                self._closed.wait(HEAR_SECONDS)
                continue
            self.change_token()

    def _hear(self) -> bool:
        """Count the notifications that arrived, without a round trip; False if the
        connection failed (`change_token` then listens again)."""
        with self._listen_lock:
            try:
                pgconn = self._listen.pgconn
                pgconn.consume_input()
                while (n := pgconn.notifies()) is not None:
                    self._heard.hear(n.extra.decode())
            except psycopg.Error:
                return False
            return True

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

    def ready(self, timeout: float) -> None:
        """Wait for the pool's start-up work (`store.pgpool`; tests count round trips)."""
        self._pool.wait(timeout)

    def close(self) -> None:
        self._closed.set()
        if self._chunks:
            with contextlib.suppress(StoreError):
                self._write(lambda db: None)
        self._pool.close()
        with self._listen_lock, contextlib.suppress(psycopg.Error):
            self._listen.close()

    # -- streaming journal ---------------------------------------------------------------

    def append_chunks(self, session_id: str, chunks: Sequence[tuple[str, str]]) -> None:
        self.append_bursts([(session_id, chunks)])

    def append_bursts(self, bursts: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> None:
        """Journal bursts, every session's in one statement; while the server is
        unreachable they wait in memory (the turns go on streaming) and are written by
        the next write that succeeds."""
        for session_id, chunks in bursts:
            for block, text in chunks:
                clean = _pgtext(text) or ""
                self._chunks.append((session_id, block, clean))
                self._chunk_bytes += len(clean)
        if not self._chunks:
            return
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
                    payload(self._instance, (c[0] for c in batch)),
                ),
            )

        self._run(work, write=False, tx=False, patience=0)
        self._written(len(batch))

    def clear_stream(self, session_id: str) -> None:
        self._chunks = [c for c in self._chunks if c[0] != session_id]
        self._chunk_bytes = sum(len(c[2]) for c in self._chunks)
        super().clear_stream(session_id)
