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
token) is `store.base`'s; the operations themselves are `store.sql`'s, shared with the
PostgreSQL store, and so are its tables (`store.schema`). What is SQLite's own is
here: opening the file and checking it, transactions on the one connection, the change
token, a write-ahead log deleted under a running process, and a full disk.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sqlite3
import stat
import time
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from .base import (
    InflightStream,
    NewEvent,
    SessionDump,
    SessionRow,
    StoreConflict,
    StoredEvent,
    StoreError,
)
from .blobs import session_blobs
from .catalog import upgrade
from .codec import loads, safe_text
from .rows import COLS, iso, session_row
from .schema import tables, upgrade_folds
from .sql import SqlStore
from .statements import Dialect, Statements

__all__ = [
    "EventStore",
    "InflightStream",
    "NewEvent",
    "SessionRow",
    "StoreConflict",
    "StoreError",
    "StoredEvent",
]

T = TypeVar("T")

log = logging.getLogger(__name__)

SCHEMA_VERSION = 8
"""1: sessions, events, messages, journal. 2: leases (many processes on one store).
3: folds (a long session's folded transcript, kept for the next process that opens it).
4: the catalog (archive, tags, previews, the FTS5 search index; `store.catalog`).
5: pending prompts, steering and queued (`store.pending`), and forks indexed by parent.
6: content-addressed blobs (image bytes) and which sessions reference them
(`store.blobs`); images stored inline by older versions stay inline and are read as such.
7: owners, the processes that wait for prompts they sent, with a heartbeat
(`store.leases`), so a prompt is held only once its sender is proven dead.
8: a kept fold's replay in a column of its own (``folds.replay``, snapshot format 5;
`store.schema.upgrade_folds` adds it and drops the folds of older formats).
Each version's tables are created by ``CREATE … IF NOT EXISTS`` on open, and the
catalog's columns and index by `store.catalog.upgrade`, which is how a store of an older
version is brought up to this one."""

BUSY_TIMEOUT = 10.0
"""Seconds a write waits for another process's transaction before it fails."""


DIALECT = Dialect(
    prefix="",
    mark="?",
    row_locks=False,
    text=safe_text,
    types={
        "int": "INTEGER",
        "bool": "INTEGER",
        "real": "REAL",
        "blob": "BLOB",
        "serial": "INTEGER PRIMARY KEY AUTOINCREMENT",
        "norowid": " WITHOUT ROWID",
        "tsv": "",
    },
)
"""SQLite speaks the shared spelling; its write transaction excludes other writers."""


def _into_wal(db: sqlite3.Connection) -> None:
    """Switch to write-ahead logging. On a new file that takes an exclusive lock, and
    SQLite does not wait for it (no busy handler): of two editor windows started at
    once on a fresh home, the second failed at start with "database is locked". So
    wait here, within the same `BUSY_TIMEOUT`."""
    deadline = time.monotonic() + BUSY_TIMEOUT
    delay = 0.005
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


class EventStore(SqlStore):
    """Append-only session logs with copy-on-write forks."""

    dialect = DIALECT

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(path.parent, 0o700)
        self._wal = Path(str(path) + "-wal")
        old_umask = os.umask(0o077)
        try:
            self._db = self._connect()
            self._check_integrity()
            self._set_up()
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
        self._stmts = Statements(self._db, DIALECT)
        self._wal_id = self._wal_identity()
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(path) + suffix)
            if p.exists():
                os.chmod(p, stat.S_IRUSR | stat.S_IWUSR)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT
        )
        _into_wal(db)
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
                (iso(time.time()),),
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

    def _set_up(self) -> None:
        """Create the tables, or bring a store of an older schema up to this one, in one
        write transaction: of two sidecars starting at once on an old store, one
        upgrades it and the other finds it done."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            found = self._check_version()
            db = Statements(self._db, DIALECT)
            for statement in tables(DIALECT):
                db.run(statement)
            if found != SCHEMA_VERSION:
                # a store written before the catalog gets its search index built now
                upgrade(db, DIALECT, backfill=found is not None)
                upgrade_folds(db, DIALECT)
                db.run(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _check_version(self) -> int | None:
        """The store's schema version (None: a new store). A store written by a newer
        Threadline is left alone, not half-upgraded."""
        has_meta = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        ).fetchone()
        if not has_meta:
            return None
        r = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if r is not None and int(r[0]) > SCHEMA_VERSION:
            raise StoreError(
                f"the session store at {self.path} was written by a newer Threadline "
                f"(schema {r[0]}, this one knows {SCHEMA_VERSION}); upgrade Threadline or set "
                "THREADLINE_HOME to another folder"
            )
        return None if r is None else int(r[0])

    def change_token(self) -> int:
        # data_version moves when another connection commits; our own commits are
        # already folded into whatever the caller caches.
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def peek_token(self) -> int:
        return self.change_token()  # in process already: no round trip to save

    def changed_since(self, token: int) -> frozenset[str] | None:
        return None  # data_version does not say which

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        self._db.close()

    @contextmanager
    def _read_tx(self) -> Generator[sqlite3.Connection, None, None]:
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

    # -- the seam (store.sql) ------------------------------------------------------------

    def _read(self, work: Callable[[Statements], T]) -> T:
        return work(self._stmts)

    def _snapshot(self, work: Callable[[Statements], T]) -> T:
        with self._read_tx():
            return work(self._stmts)

    def _write(self, work: Callable[[Statements], T]) -> T:
        with self._tx():
            return work(self._stmts)

    def _aside(self, work: Callable[[Statements], None]) -> None:
        db = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT)
        try:
            db.execute("BEGIN IMMEDIATE")
            work(Statements(db, DIALECT))
            db.execute("COMMIT")
        finally:
            db.close()  # an uncommitted transaction is rolled back with it

    # -- streaming journal ----------------------------------------------------------------

    def append_chunks(self, session_id: str, chunks: Sequence[tuple[str, str]]) -> None:
        self.append_bursts([(session_id, chunks)])

    def append_bursts(self, bursts: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> None:
        rows = [(sid, b, safe_text(t)) for sid, chunks in bursts for b, t in chunks]
        if not rows:
            return
        self._write(
            lambda db: db.many("INSERT INTO chunks(session_id, block, text) VALUES(?,?,?)", rows)
        )

    # -- export (threadline store migrate) ------------------------------------------------

    def dump_ids(self) -> list[str]:
        """Every session with rows, deleted bases included, bases before their forks."""
        return [r[0] for r in self._db.execute("SELECT id FROM sessions ORDER BY rowid")]

    def dump_session(self, session_id: str) -> SessionDump | None:
        def work(db: Statements) -> SessionDump | None:
            r = db.one(f"SELECT {COLS} FROM sessions WHERE id=?", (session_id,))
            if r is None:
                return None
            events = [
                StoredEvent(session_id, q, k, loads(p))
                for q, k, p in db.all(
                    "SELECT seq, kind, payload FROM events WHERE session_id=? ORDER BY seq",
                    (session_id,),
                )
            ]
            messages = [
                (str(m), int(q), int(o))
                for m, q, o in db.all(
                    "SELECT message_id, seq, ordinal FROM messages WHERE session_id=? "
                    "ORDER BY ordinal",
                    (session_id,),
                )
            ]
            return SessionDump(session_row(r), events, messages, session_blobs(db, session_id))

        return self._snapshot(work)


def _disk_full(exc: sqlite3.Error, folder: Path) -> bool:
    if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(exc):
        return True
    try:
        return shutil.disk_usage(folder).free < 64 * 1024
    except OSError:
        return False
