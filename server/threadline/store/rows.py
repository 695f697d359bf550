"""The rows the shared statements read, and the values they write, as typed values."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from .base import Lease, Owner, SessionRow

BASE_COLS = (
    "id, parent_id, base_id, base_seq, base_count, forked_at_message_id, cwd, title, "
    "config, created_at, updated_at, own_count, last_seq, deleted"
)
COLS = BASE_COLS + ", archived, tags, preview"
"""A session row's columns; `BASE_COLS` on a schema without the catalog."""
LEASE_COLS = "session_id, owner_id, pid, host, started, kind, turn_id, since, heartbeat, interrupt"

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
        archived=len(r) > 14 and bool(r[14]),
        tags=tuple(json.loads(r[15])) if len(r) > 15 else (),
        preview=r[16] if len(r) > 16 else None,
    )


AWAITING = "+awaiting"
"""Appended to a lease's stored ``kind`` while its turn waits for the user (no column
of its own: no schema change; `lease_row` reads it back as `Lease.awaiting`)."""


def lease_row(r: Sequence[Any]) -> Lease:
    kind = str(r[5])
    return Lease(
        session_id=r[0],
        owner=Owner(id=r[1], pid=r[2], host=r[3], started=r[4]),
        kind=kind.removesuffix(AWAITING),
        turn_id=r[6],
        since=r[7],
        heartbeat=r[8],
        interrupt=bool(r[9]),
        awaiting=kind.endswith(AWAITING),
    )


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def upto(limit: int | None) -> int:
    """A fork's read limit as a bound every sequence number passes when there is none."""
    return 2**62 if limit is None else limit
