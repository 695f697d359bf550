"""The PostgreSQL store's pool of connections, made and primed at start-up.

A sidecar's first request used to find the pool empty (its first connection was still
being made in the background) and wait for one to be made; the backend of a new
connection then read each table's catalog entries the first time a statement named
it (a session's opening names several); and the first multi-megabyte value
read on a new connection (a long session's kept fold and replay) took about twice as
long as on a connection that had carried some before (3 MB and 2 MB on loopback:
25 + 15 ms; 20 + 12 ms after 4 MB, 14 + 8 ms after 8 MB; load 5), the connection's
windows and buffers growing as data flows (TCP's autotuning, libpq's input buffer),
while a warmed-up client process alone gained nothing. So the pool is opened before
the store sets up its ``LISTEN`` connection (it connects meanwhile); each connection it
makes, before it is handed out, reads no row of the tables a session's opening reads
(`PRIME`), and the one made at start-up (`MIN_SIZE`) then reads `WARM_BYTES` the
server makes up (`WARM`; nothing stored is read): work done while the editor starts,
not while it waits, at the cost of 4 MB sent at every start (on a remote server:
~35 ms of a 1 Gbit/s link, in the background). Connections the pool adds later (the
fold writer's, while the loop holds its own) are not warmed: something waits for them.

The pool keeps one connection, not two, from the start: a connection idle in the pool
through an outage is found broken only when it is next handed out, and the journal's
one-attempt write after the server is back (`PostgresStore._flush_waiting`) must get
a live one (`tests/unit/test_store.py`, ``…waits_in_memory_through_an_outage``).
"""

from __future__ import annotations

import itertools
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


WARM_BYTES = 4 * 1024 * 1024
"""Most of the gain (measured: 1 MB warmed the next 3 + 2 MB reads by 5%, 2 MB by 13%,
4 MB by 33%, 8 MB by 37%) for half of 8 MB's cost."""

WARM: LiteralString = "SELECT convert_to(repeat(' ', %s), 'UTF8')"


def prime(conn: Connection[tuple[Any, ...]], warm: bool = True) -> None:
    """`PRIME`, then `WARM` if ``warm``, on a new pooled connection; never fails it (a
    failed statement leaves an autocommit connection idle)."""
    _quietly(conn, PRIME, ())
    if warm:
        _quietly(conn, WARM, (WARM_BYTES,))


def _quietly(
    conn: Connection[tuple[Any, ...]], statement: LiteralString, args: tuple[Any, ...]
) -> None:
    try:
        conn.execute(statement, args, binary=True).fetchall()
    except psycopg.Error as exc:
        log.debug("pooled connection not primed: %s", exc.sqlstate or type(exc).__name__)


def open_pool(conninfo: str, timeout: float) -> ConnectionPool[Connection[tuple[Any, ...]]]:
    """The pool, opening in the background (its connections are made while the caller
    goes on); the first `MIN_SIZE` connections it makes are warmed."""
    made = itertools.count()

    def configure(conn: Connection[tuple[Any, ...]]) -> None:
        prime(conn, warm=next(made) < MIN_SIZE)

    return ConnectionPool(
        conninfo,
        min_size=MIN_SIZE,
        max_size=MAX_SIZE,
        kwargs={"autocommit": True},
        configure=configure,
        timeout=timeout,
        reconnect_timeout=0,
        open=True,
        name="threadline",
    )
