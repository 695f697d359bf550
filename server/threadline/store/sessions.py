"""Sessions and forks: rows, the page-walk snapshot, deletion and the fork chain.

A fork is one row that points at a base session and a sequence number in it; reading
it reads the base's prefix. A deleted session's rows stay while a fork still reads
them (`_collect` drops them, and then its bases', once none does).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from .base import BlobInfo, Lease, Owner, SessionRow, StoreError
from .blobs import BlobOps
from .catalog import index_title, tag_pattern, tags_json
from .codec import dumps
from .leases import live_lease
from .rows import ID_BATCH, session_row, upto
from .statements import Statements

MAX_CHAIN = 10_000
"""Fork depth past which a chain is taken for a cycle (a damaged store)."""


class SessionOps(BlobOps):
    """`store.base.SessionStore`'s sessions and forks."""

    # -- sessions ---------------------------------------------------------------------

    def create_session(
        self, session_id: str, cwd: str, config: dict[str, Any], now: str, title: str | None = None
    ) -> SessionRow:
        args = (session_id, self._text(cwd), self._text(title), dumps(config), now, now)

        def work(db: Statements) -> None:
            db.run(
                "INSERT INTO sessions(id, cwd, title, config, created_at, updated_at) "
                "VALUES(?,?,?,?,?,?)",
                args,
            )
            self._index_title(db, session_id, args[2])

        self._write(work)
        row = self.get_session(session_id)
        assert row is not None
        return row

    def get_session(self, session_id: str, include_deleted: bool = False) -> SessionRow | None:
        cols = self._cols
        r = self._read(
            lambda db: db.one(
                f"SELECT {cols}, EXISTS(SELECT 1 FROM inflight "
                "WHERE inflight.session_id=sessions.id) FROM sessions WHERE id=?",
                (session_id,),
            )
        )
        if r is None:
            return None
        row = replace(session_row(r[:-1]), streaming=bool(r[-1]))
        if row.deleted and not include_deleted:
            return None
        return row

    def list_session_ids(
        self, cwd: str | None = None, *, archived: bool = False, tag: str | None = None
    ) -> list[str]:
        sql, args = "SELECT id FROM sessions WHERE NOT deleted", []
        if cwd is not None:
            # stored the same way, so a lone surrogate matches
            sql += " AND cwd=?"
            args.append(self._text(cwd))
        if self.catalog:
            sql += " AND archived" if archived else " AND NOT archived"
            if tag is not None:
                sql += " AND tags LIKE ? ESCAPE '\\'"
                args.append(tag_pattern(tag))
        elif archived or tag is not None:
            return []  # nothing is archived or tagged in a store without the catalog
        rows = self._read(lambda db: db.all(sql + " ORDER BY updated_at DESC, id DESC", args))
        return [r[0] for r in rows]

    def get_sessions(self, session_ids: Sequence[str]) -> dict[str, SessionRow]:
        cols = self._cols

        def work(db: Statements) -> dict[str, SessionRow]:
            out: dict[str, SessionRow] = {}
            for i in range(0, len(session_ids), ID_BATCH):
                part = list(session_ids[i : i + ID_BATCH])
                marks = ",".join("?" * len(part))
                for r in db.all(
                    f"SELECT {cols} FROM sessions WHERE NOT deleted AND id IN ({marks})", part
                ):
                    row = session_row(r)
                    out[row.id] = row
            return out

        return self._read(work)

    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        config: dict[str, Any] | None = None,
        now: str | None = None,
    ) -> None:
        sets: list[str] = []
        args: list[Any] = []
        if title is not None:
            sets.append("title=?")
            args.append(self._text(title))
        if config is not None:
            sets.append("config=?")
            args.append(dumps(config))
        if now is not None:
            sets.append("updated_at=?")
            args.append(now)
        if not sets:
            return
        sql = f"UPDATE sessions SET {', '.join(sets)} WHERE id=?"

        def work(db: Statements) -> None:
            db.run(sql, (*args, session_id))
            if title is not None:
                self._index_title(db, session_id, args[0])

        self._write(work)

    def _index_title(self, db: Statements, session_id: str, title: str | None) -> None:
        if self.catalog:
            index_title(db, session_id, title)

    def delete_session(
        self, session_id: str, owner: Owner | None = None, now: float | None = None
    ) -> Lease | None:
        """Hide a session; its rows go only once no fork still reads them. With an
        ``owner``, a session another live process holds is left alone and its lease
        returned."""

        def work(db: Statements) -> Lease | None:
            db.lock_session(session_id)
            if owner is not None:
                held = live_lease(db, session_id, owner, now or 0.0)
                if held is not None:
                    return held
            db.run("UPDATE sessions SET deleted=TRUE WHERE id=?", (session_id,))
            db.run("DELETE FROM leases WHERE session_id=?", (session_id,))
            if self.keeps_folds:
                db.run("DELETE FROM folds WHERE session_id=?", (session_id,))
            self._collect(db, session_id)
            return None

        return self._write(work)

    def _collect(self, db: Statements, session_id: str) -> None:
        """Drop a deleted session's rows once no fork reads them, then its bases'."""
        while True:
            r = db.one("SELECT deleted, base_id FROM sessions WHERE id=? FOR UPDATE", (session_id,))
            if r is None or not r[0]:
                return
            if db.one("SELECT 1 FROM sessions WHERE base_id=? LIMIT 1", (session_id,)):
                return
            base_id: str | None = r[1]
            for table in ("events", "messages", "chunks", "inflight", "folds", "texts"):
                if (table != "folds" or self.keeps_folds) and (table != "texts" or self.catalog):
                    db.run(f"DELETE FROM {table} WHERE session_id=?", (session_id,))
            self._drop_refs(db, session_id)
            db.run("DELETE FROM sessions WHERE id=?", (session_id,))
            if base_id is None:
                return
            session_id = base_id

    # -- forks ------------------------------------------------------------------------

    def locate_message(self, session_id: str, message_id: str) -> tuple[str, int, int] | None:
        """Where a message visible in ``session_id`` was written: (origin, seq, ordinal)."""
        r = self._read(
            lambda db: db.one(
                "SELECT session_id, seq, ordinal FROM messages WHERE message_id=?", (message_id,)
            )
        )
        if r is None:
            return None
        origin, seq, ordinal = str(r[0]), int(r[1]), int(r[2])
        # Visible only if origin is this session or an ancestor at or before the base point.
        for sid, limit in self._chain(session_id):
            if sid == origin and (limit is None or seq <= limit):
                return origin, seq, ordinal
        return None

    def last_message_id(self, session_id: str) -> str | None:
        """The newest message visible in a session (its own, else its base's prefix)."""
        for sid, limit in self._chain(session_id):
            r = self._read(
                lambda db, sid=sid, limit=limit: db.one(
                    "SELECT message_id FROM messages WHERE session_id=? AND seq<=? "
                    "ORDER BY ordinal DESC LIMIT 1",
                    (sid, upto(limit)),
                )
            )
            if r is not None:
                return str(r[0])
        return None

    def session_blob(self, session_id: str, hash: str) -> tuple[BlobInfo, bytes] | None:
        """An image's bytes by hash, only if the session references it (its own
        events, or a base's that its fork reads): one session's client cannot read, or
        copy into its prompts, another session's images by guessing or learning a hash."""
        if not self.keeps_blobs:
            return None
        for sid, _ in self._chain(session_id):
            if self._read(
                lambda db, sid=sid: db.one(
                    "SELECT 1 FROM blob_refs WHERE session_id=? AND hash=?", (sid, hash)
                )
            ):
                return self.get_blob(hash)
        return None

    def _chain(self, session_id: str, *, strict: bool = False) -> Iterator[tuple[str, int | None]]:
        """The session, then each base with the sequence number its fork reads up to.
        Ends where a session is missing, or (``strict``) raises `KeyError` there, and
        `StoreError` for a chain too deep to be anything but a cycle."""
        sid, limit = session_id, None
        for _ in range(MAX_CHAIN):
            yield sid, limit
            row = self.get_session(sid, include_deleted=True)
            if row is None:
                if strict:
                    raise KeyError(sid)
                return
            if row.base_id is None:
                return
            sid, limit = row.base_id, row.base_seq
        if strict:
            raise StoreError(f"fork chain of {session_id} is too deep or cyclic")

    def fork_session(
        self,
        new_id: str,
        parent: SessionRow,
        base_id: str,
        base_seq: int,
        base_count: int,
        forked_at_message_id: str | None,
        cwd: str,
        now: str,
        title: str | None = None,
    ) -> SessionRow:
        """Write the one row a fork costs."""
        args = (
            new_id,
            parent.id,
            base_id,
            base_seq,
            base_count,
            forked_at_message_id,
            self._text(cwd),
            self._text(title) if title is not None else parent.title,
            dumps(parent.config),
            now,
            now,
        )

        def work(db: Statements) -> None:
            db.run(
                "INSERT INTO sessions(id, parent_id, base_id, base_seq, base_count, "
                "forked_at_message_id, cwd, title, config, created_at, updated_at) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                args,
            )
            if self.catalog:
                # A fork lists with its parent's tags and, when it holds the parent's
                # first prompt, its preview.
                db.run(
                    "UPDATE sessions SET tags=?, preview=? WHERE id=?",
                    (tags_json(parent.tags), parent.preview if base_count else None, new_id),
                )
                index_title(db, new_id, args[7])

        self._write(work)
        row = self.get_session(new_id)
        assert row is not None
        return row
