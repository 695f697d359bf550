"""PostgreSQL's side of ``threadline store migrate``: a session copied in whole, and
the counts a migration verifies against its source (`store.postgres.PostgresStore`)."""

from __future__ import annotations

from .base import SessionDump
from .catalog import index_events, index_title, tags_json
from .codec import dumps
from .rows import COLS
from .sql import SqlStore
from .statements import Statements


class ImportOps(SqlStore):
    """Sessions imported into a PostgreSQL store."""

    # -- import (threadline store migrate) -----------------------------------------------

    def import_session(self, dump: SessionDump) -> str:
        """Copy a session in one transaction; idempotent. Returns ``copied`` (new),
        ``extended`` (events the copy here lacked were added) or ``kept`` (this store
        already has all of them, or went on further)."""
        self._need_catalog()
        row = dump.row

        def work(db: Statements) -> str:
            db.lock_session(row.id)
            have = db.one("SELECT last_seq FROM sessions WHERE id=? FOR UPDATE", (row.id,))
            after = -1 if have is None else int(have[0])
            if have is not None and after >= row.last_seq:
                return "kept"
            if have is None:
                db.run(
                    f"INSERT INTO sessions({COLS}) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        row.id,
                        row.parent_id,
                        row.base_id,
                        row.base_seq,
                        row.base_count,
                        row.forked_at_message_id,
                        self._text(row.cwd),
                        self._text(row.title),
                        dumps(row.config),
                        row.created_at,
                        row.updated_at,
                        row.own_count,
                        row.last_seq,
                        row.deleted,
                        row.archived,
                        tags_json(row.tags),
                        self._text(row.preview),
                    ),
                )
            else:
                db.run(
                    "UPDATE sessions SET last_seq=?, own_count=?, updated_at=?, title=?, "
                    "archived=?, tags=?, preview=? WHERE id=?",
                    (
                        *(row.last_seq, row.own_count, row.updated_at, self._text(row.title)),
                        *(row.archived, tags_json(row.tags), self._text(row.preview), row.id),
                    ),
                )
            index_title(db, row.id, self._text(row.title))
            index_events(
                db,
                row.id,
                [(e.kind, e.payload) for e in dump.events if e.seq > after],
                want_preview=False,
                clean=self._text,
            )
            db.many(
                "INSERT INTO events(session_id, seq, kind, payload) VALUES(?,?,?,?)",
                [(row.id, e.seq, e.kind, dumps(e.payload)) for e in dump.events if e.seq > after],
            )
            db.many(
                "INSERT INTO messages(message_id, session_id, seq, ordinal) VALUES(?,?,?,?)",
                [(m, row.id, q, o) for m, q, o in dump.messages if q > after],
            )
            self._add_refs(db, row.id, dump.blobs)
            return "copied" if have is None else "extended"

        return self._write(work)

    def stored_counts(self, session_id: str, upto_seq: int) -> tuple[int, int]:
        """(events, messages) of a session's own up to ``upto_seq``: what a migration
        verifies against its source."""

        def work(db: Statements) -> tuple[int, int]:
            counts: list[int] = []
            for table in ("events", "messages"):
                r = db.one(
                    f"SELECT count(*) FROM {table} WHERE session_id=? AND seq<=?",
                    (session_id, upto_seq),
                )
                counts.append(int(r[0]) if r else 0)
            return counts[0], counts[1]

        return self._snapshot(work)
