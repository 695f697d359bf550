"""A streamed turn's writes on PostgreSQL, each one statement.

The shared operations (`store.sql`) write a session's append as six statements in a
transaction (the session row read for update, the events, the messages, the search
text, the session row, the notification) and the title, the in-flight record and a
lease's release as two to four more each; with ``BEGIN`` and ``COMMIT`` a streamed turn
ran ~50 statements. Every statement costs CPU twice, in psycopg and in the server,
and on a busy machine wall time follows CPU. PostgreSQL runs data-modifying CTEs in
one statement, atomically and without a transaction around them, so each of these
writes is one statement here, its notification included (it leaves on the commit,
as a transaction's does). What each keeps:

- **An append** locks the session row (``FOR UPDATE``, which in READ COMMITTED waits
  for a concurrent writer and then reads its committed row), and every insert and the
  row's update draw from that locked row, so sequence numbers and ordinals follow
  whatever committed before; a session at another sequence than expected (another
  writer) or gone writes nothing. The search text and the preview go in the same
  statement, so the index is never behind the log; the end of a stream clears the
  journal in it too. An append with images (blob references) takes the shared path.
- **A lease** is taken in one statement when nothing stands in the way: no journal,
  and no lease or our own (the upsert's conflict check reads the committed row, and
  replaces it only when it is ours), under the session's advisory lock like the
  shared path's. Anything else (another process's lease, a journal left without
  one) goes the shared path, which decides whether its owner is dead.
- **Journal chunks that waited through an outage** go first: while any wait, these
  writes run in the shared transaction path, which writes them in the same
  transaction (`PostgresStore._write`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from .base import Acquired, Lease, NewEvent, Owner, StoreConflict
from .catalog import index_rows
from .codec import dumps
from .eventlog import message_places
from .leases import LEASE_UPSERT, lease_values
from .pgchanges import payload
from .rows import LEASE_COLS, iso
from .sql import SqlStore
from .statements import Statements

T = TypeVar("T")

CHANNEL = "threadline"
"""The channel every write notifies (``LISTEN``-ed by every sidecar of the store)."""

_NOTIFY = "(SELECT pg_notify(?, ?) FROM ok)"
"""The notification, sent only when the write's session was there to write."""


def _append_sql(catalog: bool, end_stream: bool) -> str:
    """The one statement of an append (its parameters: `PgWriteOps._append_args`)."""
    texts = (
        ", t AS (INSERT INTO texts(session_id, message_id, role, body) "
        "SELECT ok.id, x.mid, x.role, x.body FROM ok, "
        "unnest(?::text[], ?::text[], ?::text[]) AS x(mid, role, body))"
    )
    journal = (
        ", ji AS (DELETE FROM inflight WHERE session_id IN (SELECT id FROM ok))"
        ", jc AS (DELETE FROM chunks WHERE session_id IN (SELECT id FROM ok))"
    )
    return (
        "WITH s AS (SELECT id, last_seq, base_count, own_count FROM sessions "
        "WHERE id=? AND NOT deleted FOR UPDATE), "
        "ok AS (SELECT * FROM s WHERE ?::bigint IS NULL OR last_seq=?::bigint), "
        "e AS (INSERT INTO events(session_id, seq, kind, payload) "
        "SELECT ok.id, ok.last_seq + x.at, x.kind, x.payload FROM ok, "
        "unnest(?::text[], ?::text[]) WITH ORDINALITY AS x(kind, payload, at)), "
        "m AS (INSERT INTO messages(message_id, session_id, seq, ordinal) "
        "SELECT x.mid, ok.id, ok.last_seq + x.at, "
        "COALESCE(x.base, ok.base_count + ok.own_count) + x.off FROM ok, "
        "unnest(?::text[], ?::bigint[], ?::bigint[], ?::bigint[]) AS x(mid, at, base, off)), "
        "u AS (UPDATE sessions SET last_seq=ok.last_seq + ?, "
        "own_count=COALESCE(?::bigint - ok.base_count, ok.own_count) + ?, updated_at=?"
        + (", preview=COALESCE(sessions.preview, ?)" if catalog else "")
        + " FROM ok WHERE sessions.id=ok.id)"
        + (texts if catalog else "")
        + (journal if end_stream else "")
        + f" SELECT s.last_seq, {_NOTIFY} FROM (SELECT 1 AS one) AS k LEFT JOIN s ON TRUE"
    )


class PgWriteOps(SqlStore):
    """The writes of a streamed turn as one statement each (see the module)."""

    _instance: str
    """This store's id, first in the notification's payload (so it does not count its
    own); the session written follows it (`store.pgchanges`)."""

    @abstractmethod
    def _write_one(self, work: Callable[[Statements], T]) -> T:
        """Run work that is one statement and notifies by itself, as its own
        transaction (no ``BEGIN`` and ``COMMIT`` around it); as a transaction when
        journal chunks wait to be written first."""

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
        if any(ev.blobs for ev in batch):
            return super().append(session_id, batch, now, end_stream, expected_seq=expected_seq)
        sql = _append_sql(self.catalog, end_stream)
        args = self._append_args(session_id, batch, now, expected_seq)
        r = self._write_one(lambda db: db.one(sql, args))
        if r is None or r[0] is None:
            raise KeyError(session_id)
        seq = int(r[0])
        if expected_seq is not None and seq != expected_seq:
            raise StoreConflict(
                f"session {session_id} is at event {seq}, not {expected_seq}: "
                "another process wrote to it"
            )
        return seq + len(batch)

    def _append_args(
        self, session_id: str, batch: list[NewEvent], now: str, expected_seq: int | None
    ) -> list[Any]:
        places, (rewound, after) = message_places(batch)
        args: list[Any] = [
            session_id,
            expected_seq,
            expected_seq,
            [ev.kind for ev in batch],
            [dumps(ev.payload) for ev in batch],
            [p[0] for p in places],
            [p[1] for p in places],
            [p[2] for p in places],
            [p[3] for p in places],
            len(batch),
            rewound,
            after,
            now,
        ]
        if self.catalog:
            rows, first = index_rows(
                [(ev.kind, ev.payload) for ev in batch], want_preview=True, clean=self._text
            )
            args.append(self._text(first))
            args += [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]]
        return [*args, CHANNEL, payload(self._instance, [session_id])]

    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        config: dict[str, Any] | None = None,
        now: str | None = None,
    ) -> None:
        if title is None or not self.catalog:
            super().update_session(session_id, title=title, config=config, now=now)
            return
        clean = self._text(title)
        sql = (
            "WITH ok AS (SELECT 1), u AS (UPDATE sessions SET title=?, "
            "config=COALESCE(?, config), updated_at=COALESCE(?, updated_at) WHERE id=?), "
            "d AS (DELETE FROM texts WHERE session_id=? AND role='title'), "
            "i AS (INSERT INTO texts(session_id, message_id, role, body) "
            "SELECT ?, NULL, 'title', ? WHERE ?<>'') "
            f"SELECT {_NOTIFY}"
        )
        conf = None if config is None else dumps(config)
        args = (clean, conf, now, session_id, session_id, session_id, clean, clean)
        notice = payload(self._instance, [session_id])
        self._write_one(lambda db: db.one(sql, (*args, CHANNEL, notice)))

    def begin_stream(self, session_id: str, message_id: str, meta: dict[str, Any]) -> None:
        sql = (
            "WITH ok AS (SELECT 1), d AS (DELETE FROM chunks WHERE session_id=?), "
            "i AS (INSERT INTO inflight(session_id, message_id, payload) VALUES(?,?,?) "
            "ON CONFLICT(session_id) DO UPDATE SET message_id=excluded.message_id, "
            f"payload=excluded.payload) SELECT {_NOTIFY}"
        )
        notice = payload(self._instance, [session_id])
        args = (session_id, session_id, message_id, dumps(meta), CHANNEL, notice)
        self._write_one(lambda db: db.one(sql, args))

    def release_lease(self, session_id: str, owner: Owner) -> None:
        sql = (
            "WITH ok AS (SELECT 1), d AS (DELETE FROM leases WHERE session_id=? AND owner_id=?) "
            f"SELECT {_NOTIFY}"
        )
        args = (session_id, owner.id, CHANNEL, payload(self._instance, [session_id]))
        self._write_one(lambda db: db.one(sql, args))

    def acquire_lease(
        self, session_id: str, owner: Owner, kind: str, turn_id: str | None, now: float
    ) -> Acquired:
        sql = (
            f"WITH ok AS (INSERT INTO leases({LEASE_COLS}) SELECT ?,?,?,?,?,?,?,?,?,FALSE "
            "FROM (SELECT pg_advisory_xact_lock(hashtext(?))) AS k "
            "WHERE NOT EXISTS(SELECT 1 FROM inflight WHERE session_id=?) "
            f"{LEASE_UPSERT} WHERE leases.owner_id=excluded.owner_id RETURNING 1) "
            f"SELECT {_NOTIFY}, (SELECT count(*) FROM ok)"
        )
        values = lease_values(session_id, owner, kind, turn_id, now)
        notice = payload(self._instance, [session_id])
        args = (*values, session_id, session_id, CHANNEL, notice)
        r = self._write_one(lambda db: db.one(sql, args))
        if r is None or not r[1]:
            return super().acquire_lease(session_id, owner, kind, turn_id, now)
        lease = Lease(session_id, owner, kind, turn_id, iso(now), now, False)
        return Acquired(lease, mine=True, journaled=False)  # it took the lease only without one
