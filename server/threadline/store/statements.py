"""How the shared SQL reaches a backend: the dialect, and a connection inside one piece
of work.

The two backends keep the same tables and the same rules (`store.base`); what differs
is how a statement runs (one local connection and SQLite's file locks, or a pool of
connections to a server that may go away), how other writers are noticed, and a few
words of SQL. So every operation is written once, in one SQL spelling, and a backend
supplies the seam (`store.seam.SqlBase`): it runs a piece of work on a `Statements`
handle, which turns the shared spelling into the backend's (`Dialect.sql`).

The shared spelling is SQLite's with two additions PostgreSQL needs: ``?`` marks
parameters, tables are named without a prefix, and ``FOR UPDATE`` locks a row that
the transaction goes on to change (SQLite's write transaction already excludes
every other writer, so there it is dropped). Booleans are written ``TRUE`` and
``FALSE`` and upserts as ``ON CONFLICT … DO UPDATE``, which both understand.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

TABLES = (
    "meta",
    "sessions",
    "events",
    "messages",
    "inflight",
    "chunks",
    "leases",
    "folds",
    "texts",
    "pending",
    "blobs",
    "blob_refs",
    "owners",
)
"""The tables the shared statements name (a backend may prefix them)."""


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
    types: Mapping[str, str] = field(default_factory=dict[str, str])
    """The column types and table options the schema (`store.schema`) names by role:
    ``int`` (64-bit), ``bool``, ``real``, ``blob``, ``serial`` (an id the database
    counts up, with its primary key) and ``norowid`` (a table option or nothing)."""
    fts: str = "fts5"
    """How the search index is kept and queried: ``fts5`` (SQLite) or ``tsvector``
    (PostgreSQL); `store.schema` and `store.search` spell each."""
    json_rows: bool = False
    """Whether one statement can return several tables' rows as JSON arrays
    (``json_agg(json_build_array(…))``), so reads that need one snapshot are one
    round trip (`store.pending`'s ``watch``)."""
    binary_rows: bool = False
    """Whether the driver can send a row in its binary format (`Statements.one_binary`)."""

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

    @property
    def description(self) -> Any: ...


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

    def one_binary(self, sql: str, args: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """`one`, in the driver's binary format where it has one: PostgreSQL's text
        format sends a blob as hex, twice its bytes and a decode (a 5 MB kept fold:
        ~110 ms in text, ~20 ms in binary, measured on loopback)."""
        query = self._dialect.sql(sql)
        if not self._dialect.binary_rows:
            return self.one(sql, args)
        execute: Any = self._conn.execute  # psycopg's, which takes ``binary``
        row: tuple[Any, ...] | None = execute(query, args, binary=True).fetchone()
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

    def columns(self, table: str) -> set[str]:
        """The columns a table has now (an older schema may lack some)."""
        cur = self._conn.execute(self._dialect.sql(f"SELECT * FROM {table} LIMIT 0"), ())
        names = {str(d[0]) for d in cur.description or ()}
        cur.fetchall()
        return names

    def lock_session(self, session_id: str) -> None:
        if self._dialect.session_lock is not None:
            self.run(self._dialect.session_lock, (session_id,))
