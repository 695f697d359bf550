"""Leases: which process runs a turn, a compaction or a repair on a session, taken over
only once its owner is dead (`store.owners`)."""

from __future__ import annotations

from typing import Any

from .base import Acquired, Lease, Owner, Presence
from .owners import owner_is_dead
from .rows import AWAITING, LEASE_COLS, iso, lease_row
from .seam import SqlBase
from .statements import Statements


def lease_of(db: Statements, session_id: str) -> Lease | None:
    r = db.one(f"SELECT {LEASE_COLS} FROM leases WHERE session_id=?", (session_id,))
    return None if r is None else lease_row(r)


def live_lease(db: Statements, session_id: str, me: Owner, now: float) -> Lease | None:
    """The lease of another process that is still alive, if any."""
    lease = lease_of(db, session_id)
    if lease is None or lease.owner.id == me.id or owner_is_dead(lease, me, now):
        return None
    return lease


STALE_OWNER_SECONDS = 86_400.0
"""An owners row whose heartbeat is this old is dropped (by the next process that
announces itself): its process died as it waited, and no lease lifetime is this long."""


_LEASE_AND_JOURNAL = (
    "SELECT (SELECT 1 FROM inflight WHERE session_id=?), "
    + ", ".join(f"l.{c}" for c in LEASE_COLS.split(", "))
    + " FROM (SELECT 1 AS one) AS k LEFT JOIN leases l ON l.session_id=?"
)
"""A session's lease (if any) and whether it has an in-flight record, in one row:
taking a lease reads both, and on PostgreSQL each read waited for is a round trip."""


LEASE_UPSERT = (
    "ON CONFLICT(session_id) DO UPDATE SET owner_id=excluded.owner_id, "
    "pid=excluded.pid, host=excluded.host, started=excluded.started, "
    "kind=excluded.kind, turn_id=excluded.turn_id, since=excluded.since, "
    "heartbeat=excluded.heartbeat, interrupt=FALSE"
)
"""How a lease taken replaces the row that was there (ours, or a dead owner's)."""


def lease_values(
    session_id: str, owner: Owner, kind: str, turn_id: str | None, now: float
) -> tuple[Any, ...]:
    """A lease row's values but ``interrupt`` (`LEASE_COLS`' order)."""
    return (
        session_id,
        owner.id,
        owner.pid,
        owner.host,
        owner.started,
        kind,
        turn_id,
        iso(now),
        now,
    )


def lease_and_journal(db: Statements, session_id: str) -> tuple[Lease | None, bool]:
    r = db.one(_LEASE_AND_JOURNAL, (session_id, session_id))
    assert r is not None  # the left join always yields its one row
    return (None if r[1] is None else lease_row(r[1:])), r[0] is not None


class LeaseOps(SqlBase):
    """`store.base.SessionStore`'s leases."""

    # -- leases -----------------------------------------------------------------------

    def get_lease(self, session_id: str) -> Lease | None:
        return self._read(lambda db: lease_of(db, session_id))

    def acquire_lease(
        self, session_id: str, owner: Owner, kind: str, turn_id: str | None, now: float
    ) -> Acquired:
        since = iso(now)

        def work(db: Statements) -> Acquired:
            db.lock_session(session_id)
            held, journaled = lease_and_journal(db, session_id)
            took_over: Lease | None = None
            if held is not None and held.owner.id != owner.id:
                if not owner_is_dead(held, owner, now):
                    return Acquired(held, mine=False)
                took_over = held
            elif held is None and journaled:
                # A journal with no lease: its writer died before taking one or after
                # losing it (or was a Threadline older than leases). It is ours to recover.
                took_over = Lease(session_id, Owner("", 0, "", 0.0), "turn", None, "", 0.0, False)
            db.run(
                f"INSERT INTO leases({LEASE_COLS}) VALUES(?,?,?,?,?,?,?,?,?,FALSE) {LEASE_UPSERT}",
                lease_values(session_id, owner, kind, turn_id, now),
            )
            lease = Lease(session_id, owner, kind, turn_id, since, now, False)
            return Acquired(lease, mine=True, took_over=took_over, journaled=journaled)

        return self._write(work)

    def release_lease(self, session_id: str, owner: Owner) -> None:
        self._write(
            lambda db: db.run(
                "DELETE FROM leases WHERE session_id=? AND owner_id=?", (session_id, owner.id)
            )
        )

    def heartbeat(self, owner: Owner, now: float, *, present: bool = False) -> list[str]:
        both = present and self.keeps_owners

        def work(db: Statements) -> list[tuple[Any, ...]]:
            if both:
                db.run("UPDATE owners SET heartbeat=? WHERE owner_id=?", (now, owner.id))
            return db.all(
                "UPDATE leases SET heartbeat=? WHERE owner_id=? RETURNING session_id, interrupt",
                (now, owner.id),
            )

        # one statement is atomic by itself: no transaction (one round trip, not two)
        rows = self._quiet(work) if both else self._quiet_one(work)
        return [r[0] for r in rows if r[1]]

    # -- owners that wait for their prompts ----------------------------------------------

    keeps_owners: bool = True

    def announce_owner(self, owner: Owner, now: float) -> None:
        if not self.keeps_owners:
            return

        def work(db: Statements) -> None:
            db.run(
                "INSERT INTO owners(owner_id, pid, host, started, heartbeat) VALUES(?,?,?,?,?) "
                "ON CONFLICT(owner_id) DO UPDATE SET heartbeat=excluded.heartbeat",
                (owner.id, owner.pid, owner.host, owner.started, now),
            )
            # rows of processes killed as they waited: long dead by any rule
            db.run("DELETE FROM owners WHERE heartbeat<?", (now - STALE_OWNER_SECONDS,))

        self._quiet(work)

    def forget_owner(self, owner: Owner) -> None:
        if self.keeps_owners:
            self._quiet(lambda db: db.run("DELETE FROM owners WHERE owner_id=?", (owner.id,)))

    def get_owner(self, owner_id: str) -> Presence | None:
        if not self.keeps_owners:
            return None
        r = self._read(
            lambda db: db.one(
                "SELECT pid, host, started, heartbeat FROM owners WHERE owner_id=?", (owner_id,)
            )
        )
        if r is None:
            return None
        return Presence(Owner(owner_id, int(r[0]), str(r[1]), float(r[2])), float(r[3]))

    def request_interrupt(self, session_id: str) -> Lease | None:
        r = self._write(
            lambda db: db.one(
                f"UPDATE leases SET interrupt=TRUE WHERE session_id=? RETURNING {LEASE_COLS}",
                (session_id,),
            )
        )
        return None if r is None else lease_row(r)

    def mark_awaiting(self, session_id: str, owner: Owner, awaiting: bool) -> None:
        def work(db: Statements) -> None:
            held = lease_of(db, session_id)
            if held is None or held.owner.id != owner.id:
                return  # not ours (any more): nothing to say
            kind = held.kind + (AWAITING if awaiting else "")
            db.run(
                "UPDATE leases SET kind=? WHERE session_id=? AND owner_id=?",
                (kind, session_id, owner.id),
            )

        self._write(work)
