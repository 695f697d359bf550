"""The event log: appends at an expected sequence, the logical log of a fork, and the
folded transcripts kept beside it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .base import NewEvent, SessionRow, StoreConflict, StoredEvent
from .catalog import index_events, index_title, tags_json
from .codec import dumps, loads
from .journal import clear_journal
from .rows import upto
from .sessions import SessionOps
from .statements import Statements

_FOLD_KEPT = "EXISTS(SELECT 1 FROM sessions WHERE id=? AND NOT deleted AND last_seq>=?)"
"""A fold is kept only for a live session and never past its log."""


Place = tuple[str, int, int | None, int]
"""Where an appended message goes: its id, its event's position in the batch (from 1),
and its ordinal as a base plus an offset: the base is the session's count before the
append (None) or, after a rewind in the batch, the count the rewind set."""


def message_places(batch: Sequence[NewEvent]) -> tuple[list[Place], tuple[int | None, int]]:
    """Each message's place, and the session's message count after the batch in the
    same terms: ``(base, offset)`` (base None: the count before the append)."""
    places: list[Place] = []
    base: int | None = None
    offset = 0
    for at, ev in enumerate(batch, 1):
        if ev.message_count is not None:  # a rewind: the count starts again there
            base, offset = ev.message_count, 0
        for mid in ev.message_ids:
            offset += 1
            places.append((mid, at, base, offset))
    return places, (base, offset)


class EventLogOps(SessionOps):
    """`store.base.SessionStore`'s events and kept folds (a fork's log follows its
    chain of bases, `SessionOps._chain`)."""

    # -- events -----------------------------------------------------------------------

    def append(
        self,
        session_id: str,
        events: Iterable[NewEvent],
        now: str,
        end_stream: bool = False,
        *,
        expected_seq: int | None = None,
    ) -> int:
        """Append events in one transaction; returns the last sequence number."""
        batch = list(events)

        def work(db: Statements) -> int:
            seq = self._append_in(db, session_id, batch, now, expected_seq)
            if end_stream:
                clear_journal(db, session_id)
            return seq

        return self._write(work)

    def _append_in(
        self,
        db: Statements,
        session_id: str,
        batch: Sequence[NewEvent],
        now: str,
        expected_seq: int | None = None,
    ) -> int:
        """Append inside the caller's transaction, indexing the messages for search."""
        catalog = ", preview IS NULL" if self.catalog else ""
        r = db.one(
            f"SELECT last_seq, base_count + own_count{catalog} FROM sessions "
            "WHERE id=? AND NOT deleted FOR UPDATE",
            (session_id,),
        )
        if r is None:
            raise KeyError(session_id)
        seq, ordinal = int(r[0]), int(r[1])
        if expected_seq is not None and seq != expected_seq:
            raise StoreConflict(
                f"session {session_id} is at event {seq}, not {expected_seq}: "
                "another process wrote to it"
            )
        places, (rewound, after) = message_places(batch)
        messages = [
            (mid, session_id, seq + at, (ordinal if base is None else base) + offset)
            for mid, at, base, offset in places
        ]
        grown = (ordinal if rewound is None else rewound) + after - ordinal
        rows = [(session_id, seq + i, ev.kind, dumps(ev.payload)) for i, ev in enumerate(batch, 1)]
        seq += len(batch)
        db.many("INSERT INTO events(session_id, seq, kind, payload) VALUES(?,?,?,?)", rows)
        self._add_refs(db, session_id, [b for ev in batch for b in ev.blobs])
        db.many(
            "INSERT INTO messages(message_id, session_id, seq, ordinal) VALUES(?,?,?,?)",
            messages,
        )
        first: str | None = None
        if self.catalog:
            first = index_events(
                db,
                session_id,
                [(ev.kind, ev.payload) for ev in batch],
                want_preview=bool(r[2]),
                clean=self._text,
            )
        if first is None:
            db.run(
                "UPDATE sessions SET last_seq=?, own_count=own_count+?, updated_at=? WHERE id=?",
                (seq, grown, now, session_id),
            )
        else:
            db.run(
                "UPDATE sessions SET last_seq=?, own_count=own_count+?, updated_at=?, "
                "preview=? WHERE id=?",
                (seq, grown, now, self._text(first), session_id),
            )
        return seq

    def import_session_log(
        self,
        session_id: str,
        cwd: str,
        title: str | None,
        config: dict[str, Any],
        tags: Sequence[str],
        events: Sequence[NewEvent],
        now: str,
    ) -> SessionRow:
        """A new session and its whole log in one transaction: all of it or nothing."""
        self._need_catalog()
        args = (session_id, self._text(cwd), self._text(title), dumps(config), now, now)

        def work(db: Statements) -> None:
            db.run(
                "INSERT INTO sessions(id, cwd, title, config, created_at, updated_at, tags) "
                "VALUES(?,?,?,?,?,?,?)",
                (*args, tags_json(tags)),
            )
            index_title(db, session_id, args[2])
            self._append_in(db, session_id, events, now)

        self._write(work)
        row = self.get_session(session_id)
        assert row is not None
        return row

    def load_events(self, session_id: str, after_seq: int | None = None) -> list[StoredEvent]:
        """The session's logical log: its bases' prefixes, then its own events."""
        if after_seq is not None:
            rows = self._read(
                lambda db: db.all(
                    "SELECT seq, kind, payload FROM events WHERE session_id=? AND seq>? "
                    "ORDER BY seq",
                    (session_id, after_seq),
                )
            )
            return [StoredEvent(session_id, q, k, loads(p)) for q, k, p in rows]
        chain = list(self._chain(session_id, strict=True))

        def work(db: Statements) -> list[StoredEvent]:
            out: list[StoredEvent] = []
            for sid, limit in reversed(chain):
                out.extend(
                    StoredEvent(sid, s, k, loads(p))
                    for s, k, p in db.all(
                        "SELECT seq, kind, payload FROM events WHERE session_id=? AND seq<=? "
                        "ORDER BY seq",
                        (sid, upto(limit)),
                    )
                )
            return out

        return self._read(work)

    # -- kept folds -------------------------------------------------------------------

    def load_fold(self, session_id: str) -> tuple[int, bytes] | None:
        if not self.keeps_folds:
            return None
        r = self._read(
            lambda db: db.one_binary(
                "SELECT folds.seq, folds.data FROM folds JOIN sessions "
                "ON sessions.id=folds.session_id "
                "WHERE folds.session_id=? AND folds.seq<=sessions.last_seq "
                "AND NOT sessions.deleted",
                (session_id,),
            )
        )
        if r is None:
            return None
        data = r[1]
        return int(r[0]), data if isinstance(data, bytes) else bytes(data)

    def load_fold_replay(self, session_id: str, seq: int) -> bytes | None:
        if not (self.keeps_folds and self.keeps_replay):
            return None
        r = self._read(
            lambda db: db.one_binary(
                "SELECT replay FROM folds WHERE session_id=? AND seq=?", (session_id, seq)
            )
        )
        if r is None or r[0] is None:
            return None
        data = r[0]
        return data if isinstance(data, bytes) else bytes(data)

    def save_fold(
        self, session_id: str, seq: int, data: bytes, replay: bytes | None = None
    ) -> None:
        if not self.keeps_folds:
            return
        if not self.keeps_replay:
            self._aside(
                lambda db: db.run(
                    "INSERT INTO folds(session_id, seq, data) SELECT ?, ?, ? "
                    f"WHERE {_FOLD_KEPT} ON CONFLICT(session_id) DO UPDATE "
                    "SET seq=excluded.seq, data=excluded.data WHERE excluded.seq >= folds.seq",
                    (session_id, seq, data, session_id, seq),
                )
            )
            return
        self._aside(
            lambda db: db.run(
                "INSERT INTO folds(session_id, seq, data, replay) SELECT ?, ?, ?, ? "
                f"WHERE {_FOLD_KEPT} ON CONFLICT(session_id) DO UPDATE SET seq=excluded.seq, "
                "data=excluded.data, replay=excluded.replay WHERE excluded.seq >= folds.seq",
                (session_id, seq, data, replay, session_id, seq),
            )
        )
