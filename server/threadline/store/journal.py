"""The journal of an answer being streamed: what a crash must not lose, and what a
process watching a turn that runs elsewhere reads as it grows."""

from __future__ import annotations

import json
from typing import Any

from .base import InflightStream, StreamTail
from .codec import dumps
from .seam import SqlBase
from .statements import Statements


def clear_journal(db: Statements, session_id: str) -> None:
    db.run("DELETE FROM inflight WHERE session_id=?", (session_id,))
    db.run("DELETE FROM chunks WHERE session_id=?", (session_id,))


class JournalOps(SqlBase):
    """`store.base.SessionStore`'s streaming journal (a backend adds `append_chunks`)."""

    # -- streaming journal ------------------------------------------------------------

    def begin_stream(self, session_id: str, message_id: str, meta: dict[str, Any]) -> None:
        def work(db: Statements) -> None:
            db.run("DELETE FROM chunks WHERE session_id=?", (session_id,))
            db.run(
                "INSERT INTO inflight(session_id, message_id, payload) VALUES(?,?,?) "
                "ON CONFLICT(session_id) DO UPDATE SET message_id=excluded.message_id, "
                "payload=excluded.payload",
                (session_id, message_id, dumps(meta)),
            )

        self._write(work)

    def inflight_streams(self) -> list[InflightStream]:
        ids = self._read(lambda db: db.all("SELECT session_id FROM inflight"))
        out: list[InflightStream] = []
        for (sid,) in ids:
            stream = self.inflight_stream(sid)
            if stream is not None:
                out.append(stream)
        return out

    def inflight_stream(self, session_id: str) -> InflightStream | None:
        tail = self.stream_since(session_id, 0)
        if tail.message_id is None:
            return None
        text: list[str] = []
        thought: list[str] = []
        for _, block, t in tail.chunks:
            (thought if block == "thought" else text).append(t)
        last = tail.chunks[-1][0] if tail.chunks else 0
        return InflightStream(
            session_id, tail.message_id, tail.meta, "".join(text), "".join(thought), last
        )

    def stream_since(self, session_id: str, after_chunk: int) -> StreamTail:
        # The header and the chunks belong to one snapshot (one stream): one statement
        # sees one by itself, in one round trip (a transaction around two reads: three
        # on PostgreSQL, and a turn asks at its start).
        rows = self._read(
            lambda db: db.all(
                "SELECT i.message_id, i.payload, c.id, c.block, c.text FROM inflight i "
                "LEFT JOIN chunks c ON c.session_id=i.session_id AND c.id>? "
                "WHERE i.session_id=? ORDER BY c.id",
                (after_chunk, session_id),
            )
        )
        if not rows:
            return StreamTail(None, {}, [])
        chunks = [(r[2], r[3], r[4]) for r in rows if r[2] is not None]
        return StreamTail(rows[0][0], json.loads(rows[0][1]), chunks)

    def clear_stream(self, session_id: str) -> None:
        self._write(lambda db: clear_journal(db, session_id))
