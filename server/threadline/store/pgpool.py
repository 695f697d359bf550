"""The PostgreSQL store's pool of connections, made and primed at start-up.

A sidecar's first request used to find the pool empty (its first connection was still
being made in the background) and wait for one to be made; the backend of a new
connection then read each table's catalog entries the first time a statement named
it (the first ``session/load`` names six tables). So the pool is opened before the
store sets up its ``LISTEN`` connection (both connect at once), keeps `MIN_SIZE`
connections from the start (the event loop's and the fold writer's, which a sidecar
uses anyway), and each new connection reads, once, no row of the tables the opening
of a session reads (`PRIME`): work done while the editor starts, not while it waits.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg import Connection
from psycopg_pool import ConnectionPool

log = logging.getLogger(__name__)

MIN_SIZE = 2
MAX_SIZE = 4

PRIME = (
    "SELECT 1 FROM tl_sessions, tl_events, tl_folds, tl_inflight, tl_chunks, tl_leases, "
    "tl_pending WHERE false"
)
"""Names every table a session's opening reads (its row, events, kept fold, journal,
lease, pending prompts); reads none of their rows. A table missing (a database being
set up) or not granted (a team role) only leaves that connection unprimed."""


def prime(conn: Connection[tuple[Any, ...]]) -> None:
    """`PRIME` on a new pooled connection (the pool's ``configure``); never fails it."""
    try:
        conn.execute(PRIME).fetchall()
    except psycopg.Error as exc:
        log.debug("pooled connection not primed: %s", exc.sqlstate or type(exc).__name__)


def open_pool(conninfo: str, timeout: float) -> ConnectionPool[Connection[tuple[Any, ...]]]:
    """The pool, opening in the background (its connections are made while the caller
    goes on)."""
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
