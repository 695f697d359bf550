"""The PostgreSQL store's pool of connections, made and primed at start-up.

A sidecar's first request used to find the pool empty (its first connection was still
being made in the background) and wait for one to be made; the backend of a new
connection then read each table's catalog entries the first time a statement named
it (a session's opening names several). So the pool is opened before the store sets
up its ``LISTEN`` connection (it connects meanwhile), and each connection it makes,
before it is handed out, names the tables a session's opening reads without reading
a row of them (`PRIME`): work done while the editor starts, not while it waits.

Not done: warming a new connection's buffers by reading megabytes the server makes
up. The first multi-megabyte read on a fresh loopback connection is slower than later
ones (TCP's windows grow as data flows), but on a quiet machine a long session's first
load was no faster for it, and a team's remote server would send those megabytes at
every sidecar start.

The pool keeps one connection, not two, from the start: a connection idle in the pool
through an outage is found broken only when it is next handed out, and the journal's
one-attempt write after the server is back (`PostgresStore._flush_waiting`) must get
a live one (`tests/unit/test_store.py`, ``…waits_in_memory_through_an_outage``).
"""

from __future__ import annotations

import logging
from typing import Any, LiteralString

import psycopg
from psycopg import Connection
from psycopg_pool import ConnectionPool

log = logging.getLogger(__name__)

MIN_SIZE = 1
MAX_SIZE = 4

PRIME: LiteralString = (
    "SELECT 1 FROM tl_sessions, tl_events, tl_folds, tl_inflight, tl_chunks, tl_leases, "
    "tl_pending WHERE false"
)
"""Names every table a session's opening reads (its row, events, kept fold, journal,
lease, pending prompts); reads none of their rows. A table missing (a database being
set up) or not granted (a team role) only leaves that connection unprimed."""


def prime(conn: Connection[tuple[Any, ...]]) -> None:
    """`PRIME` on a new pooled connection; never fails it (a failed statement leaves
    an autocommit connection idle)."""
    _quietly(conn, PRIME, ())


def _quietly(
    conn: Connection[tuple[Any, ...]], statement: LiteralString, args: tuple[Any, ...]
) -> None:
    try:
        conn.execute(statement, args, binary=True).fetchall()
    except psycopg.Error as exc:
        log.debug("pooled connection not primed: %s", exc.sqlstate or type(exc).__name__)


def open_pool(conninfo: str, timeout: float) -> ConnectionPool[Connection[tuple[Any, ...]]]:
    """The pool, opening in the background (its connections are made while the caller
    goes on), each connection primed."""
    return ConnectionPool(
        conninfo,
        min_size=MIN_SIZE,
        max_size=MAX_SIZE,
        kwargs={"autocommit": True},
        configure=prime,
        timeout=timeout,
        reconnect_timeout=0,
        open=True,
        name="threadline",
    )
