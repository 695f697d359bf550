"""Prompts sent to a session while it works: steering input and the queue.

A prompt sent while a turn runs is stored at once, in a table of its own (SQLite
schema 5, PostgreSQL 4; spelled in `store.schema`), not in the session's event log,
for three reasons the log cannot meet: anyone may add one (a second editor window,
while the first holds the session's lease and is the log's only writer); each is
taken by exactly one turn (`claim_pending` is a compare-and-set on its row, so two
sidecars never run it twice); and none is inherited by a fork (a fork reads its parent's log).

A row's life: ``waiting`` ( a steer for the running turn's next model call, a
queued prompt for the next turn) → ``taken`` (it joined a turn, or started one:
``turn_id``) → ``done`` (``outcome``: how that turn ended). A row may instead be
``held`` (kept, not run until the user says so: after a crash, an interrupt or a
failure) or ``removed``. Done and removed rows stay until the process that waits for
them has read them (`forget_pending`), or `STALE_SECONDS` have passed.

`watch` reads what every window shows of a set of sessions in one snapshot: each
session's row, lease, pending prompts and forks, so a process fans one change token
out to every session it has loaded without a query per session.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .base import PendingPrompt, StoreError, Watched
from .codec import dumps
from .rows import ID_BATCH, LEASE_COLS, lease_row, session_row
from .seam import SqlBase
from .statements import Statements

PENDING_COLS = "id, session_id, position, mode, prompt, state, turn_id, outcome, created_at, origin"

STALE_SECONDS = 600.0
"""Done and removed rows nobody collected (their waiter's process is gone) go after this."""

WAITING = ("waiting", "held")
"""States of a prompt that has not run yet (listed, edited and removed)."""


def pending_row(r: Sequence[Any]) -> PendingPrompt:
    return PendingPrompt(
        id=r[0],
        session_id=r[1],
        position=int(r[2]),
        mode=r[3],
        prompt=json.loads(r[4]),
        state=r[5],
        turn_id=r[6],
        outcome=None if r[7] is None else json.loads(r[7]),
        created_at=r[8],
        origin=r[9],
    )


@dataclass(frozen=True, slots=True)
class _Batch:
    ids: list[str]

    def marks(self) -> str:
        return ",".join("?" * len(self.ids))


class PendingOps(SqlBase):
    """The pending prompts of `store.base.SessionStore`, written once for both backends."""

    keeps_pending: bool = True
    """Whether this connection may use the pending table (a PostgreSQL role granted only
    the older tables may not: then nothing waits, and windows are shown the rest)."""

    def _need_pending(self) -> None:
        if not self.keeps_pending:
            raise StoreError(
                "this role may not use the prompt queue of this session store (the table "
                "tl_pending needs granting, docs/teams.md); wait for the turn to end"
            )

    def add_pending(
        self,
        session_id: str,
        prompt_id: str,
        mode: str,
        prompt: list[dict[str, Any]],
        origin: str,
        now: str,
    ) -> PendingPrompt:
        self._need_pending()
        stamp = time.time()

        def work(db: Statements) -> PendingPrompt:
            db.lock_session(session_id)
            if db.one("SELECT 1 FROM sessions WHERE id=? AND NOT deleted", (session_id,)) is None:
                raise KeyError(session_id)
            r = db.one("SELECT max(position) FROM pending WHERE session_id=?", (session_id,))
            position = (int(r[0]) if r and r[0] is not None else 0) + 1
            db.run(
                f"INSERT INTO pending({PENDING_COLS}, changed) "
                "VALUES(?,?,?,?,?,'waiting',NULL,NULL,?,?,?)",
                (prompt_id, session_id, position, mode, dumps(prompt), now, origin, stamp),
            )
            db.run(
                "DELETE FROM pending WHERE state IN ('done','removed') AND changed<?",
                (stamp - STALE_SECONDS,),
            )
            got = db.one(f"SELECT {PENDING_COLS} FROM pending WHERE id=?", (prompt_id,))
            assert got is not None
            return pending_row(got)

        return self._write(work)

    def pending(self, session_id: str) -> list[PendingPrompt]:
        if not self.keeps_pending:
            return []
        rows = self._read(
            lambda db: db.all(
                f"SELECT {PENDING_COLS} FROM pending WHERE session_id=? ORDER BY position",
                (session_id,),
            )
        )
        return [pending_row(r) for r in rows]

    def get_pending(self, prompt_id: str) -> PendingPrompt | None:
        if not self.keeps_pending:
            return None
        r = self._read(
            lambda db: db.one(f"SELECT {PENDING_COLS} FROM pending WHERE id=?", (prompt_id,))
        )
        return None if r is None else pending_row(r)

    def _change(self, sql: str, args: Sequence[Any]) -> list[PendingPrompt]:
        """One update of pending rows, returning the rows it changed."""
        if not self.keeps_pending:
            return []
        stamp = time.time()
        rows = self._write(
            lambda db: db.all(
                f"UPDATE pending SET changed=?, {sql} RETURNING {PENDING_COLS}", (stamp, *args)
            )
        )
        return sorted((pending_row(r) for r in rows), key=lambda p: p.position)

    def edit_pending(self, prompt_id: str, prompt: list[dict[str, Any]]) -> PendingPrompt | None:
        """Replace the text of a prompt that has not run; None once it has (or is gone)."""
        got = self._change(
            "prompt=? WHERE id=? AND state IN ('waiting','held')", (dumps(prompt), prompt_id)
        )
        return got[0] if got else None

    def remove_pending(self, session_id: str, prompt_id: str | None = None) -> list[PendingPrompt]:
        """Remove one prompt that has not run, or (``prompt_id`` None) all of them."""
        if prompt_id is None:
            return self._change(
                "state='removed' WHERE session_id=? AND state IN ('waiting','held')",
                (session_id,),
            )
        return self._change(
            "state='removed' WHERE session_id=? AND id=? AND state IN ('waiting','held')",
            (session_id, prompt_id),
        )

    def claim_pending(self, prompt_id: str, turn_id: str) -> PendingPrompt | None:
        """Take a waiting prompt for a turn; None when another turn took it first, or it
        was held or removed meanwhile. The one place a prompt is taken: at most once."""
        got = self._change(
            "state='taken', turn_id=? WHERE id=? AND state='waiting'", (turn_id, prompt_id)
        )
        return got[0] if got else None

    def unclaim_pending(self, prompt_id: str) -> None:
        """Put back a prompt taken for a turn that could not start."""
        self._change("state='waiting', turn_id=NULL WHERE id=? AND state='taken'", (prompt_id,))

    def finish_pending(self, prompt_ids: Sequence[str], outcome: dict[str, Any]) -> None:
        if not prompt_ids:
            return
        batch = _Batch(list(prompt_ids))
        self._change(
            f"state='done', outcome=? WHERE id IN ({batch.marks()})", (dumps(outcome), *batch.ids)
        )

    def hold_pending(self, session_id: str) -> list[PendingPrompt]:
        """Keep the session's waiting prompts from running until the user says so."""
        return self._change("state='held' WHERE session_id=? AND state='waiting'", (session_id,))

    def release_pending(self, session_id: str, origin: str) -> list[PendingPrompt]:
        """Let held prompts run again (in their order), sent now by ``origin`` (the
        process that resumed them, which waits for them in place of their sender)."""
        return self._change(
            "state='waiting', origin=? WHERE session_id=? AND state='held'", (origin, session_id)
        )

    def forget_pending(self, prompt_ids: Sequence[str]) -> None:
        """Drop finished rows whose waiter has read them."""
        if not prompt_ids or not self.keeps_pending:
            return
        batch = _Batch(list(prompt_ids))
        self._write(
            lambda db: db.run(
                "DELETE FROM pending WHERE state IN ('done','removed') "
                f"AND id IN ({batch.marks()})",
                batch.ids,
            )
        )

    # -- what windows show ------------------------------------------------------------

    def _waiting(self, db: Statements, batch: _Batch) -> list[tuple[Any, ...]]:
        if not self.keeps_pending:
            return []
        return db.all(
            f"SELECT {PENDING_COLS} FROM pending WHERE session_id IN ({batch.marks()}) "
            "AND state IN ('waiting','held','taken') ORDER BY position",
            batch.ids,
        )

    def watch(self, session_ids: Sequence[str]) -> dict[str, Watched]:
        """Each session's row (None once deleted), lease, prompts that have not finished,
        and forks, read in one snapshot, in one attempt (`SqlBase._glance`). On a
        server (PostgreSQL) one statement: every window polls this while sessions
        stream, and each round trip there waits on the event loop."""
        if self.dialect.json_rows and len(session_ids) <= ID_BATCH:
            return self._glance_one(lambda db: self._watch_one(db, session_ids))

        def work(db: Statements) -> dict[str, Watched]:
            rows: list[Sequence[Any]] = []
            leases: list[Sequence[Any]] = []
            pending: list[Sequence[Any]] = []
            forks: list[Sequence[Any]] = []
            for i in range(0, len(session_ids), ID_BATCH):
                batch = _Batch(list(session_ids[i : i + ID_BATCH]))
                rows += db.all(
                    f"SELECT {self._cols} FROM sessions WHERE id IN ({batch.marks()})", batch.ids
                )
                leases += db.all(
                    f"SELECT {LEASE_COLS} FROM leases WHERE session_id IN ({batch.marks()})",
                    batch.ids,
                )
                pending += self._waiting(db, batch)
                forks += db.all(
                    "SELECT parent_id, id, forked_at_message_id FROM sessions "
                    f"WHERE parent_id IN ({batch.marks()}) AND NOT deleted ORDER BY created_at, id",
                    batch.ids,
                )
            return _watched(session_ids, rows, leases, pending, forks)

        return self._glance(work)

    def _watch_one(self, db: Statements, session_ids: Sequence[str]) -> dict[str, Watched]:
        ids = list(session_ids)
        waiting = (
            f"(SELECT json_agg(json_build_array({PENDING_COLS}) ORDER BY position) "
            "FROM pending WHERE session_id = ANY(?) AND state IN ('waiting','held','taken'))"
            if self.keeps_pending
            else "NULL"
        )
        r = db.one(
            f"SELECT (SELECT json_agg(json_build_array({self._cols})) FROM sessions "
            "WHERE id = ANY(?)), "
            f"(SELECT json_agg(json_build_array({LEASE_COLS})) FROM leases "
            "WHERE session_id = ANY(?)), "
            f"{waiting}, "
            "(SELECT json_agg(json_build_array(parent_id, id, forked_at_message_id) "
            "ORDER BY created_at, id) FROM sessions WHERE parent_id = ANY(?) AND NOT deleted)",
            (ids, ids, *([ids] if self.keeps_pending else []), ids),
        )
        sessions, leases, pending, forks = r or (None, None, None, None)
        return _watched(session_ids, sessions or (), leases or (), pending or (), forks or ())


def _watched(
    session_ids: Sequence[str],
    rows: Iterable[Sequence[Any]],
    leases: Iterable[Sequence[Any]],
    pending: Iterable[Sequence[Any]],
    forks: Iterable[Sequence[Any]],
) -> dict[str, Watched]:
    """What `watch` answers, from the rows it read (sessions, leases, prompts that have
    not finished in order, forks in order)."""
    found = {row.id: None if row.deleted else row for row in map(session_row, rows)}
    held = {lease.session_id: lease for lease in map(lease_row, leases)}
    prompts: dict[str, list[PendingPrompt]] = {}
    for p in map(pending_row, pending):
        prompts.setdefault(p.session_id, []).append(p)
    children: dict[str, list[tuple[str, str | None]]] = {}
    for parent, child, at in forks:
        children.setdefault(parent, []).append((child, at))
    return {
        sid: Watched(
            row=found.get(sid),
            lease=held.get(sid),
            pending=tuple(prompts.get(sid, ())),
            forks=tuple(children.get(sid, ())),
        )
        for sid in session_ids
    }
