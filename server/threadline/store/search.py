"""Full-text search over every session's titles and messages, and the catalog a session
list filters by (archived, tags, the first prompt's first line).

The index is the ``texts`` table: one row per message with its searchable text
(`store.texts`) and one per session title, written by the store in the same transaction
as the events and titles they come from, so the index is never behind the log. Each
backend searches it its own way: SQLite through an FTS5 table kept by triggers (BM25
ranking, ``snippet()``), PostgreSQL through a generated ``tsvector`` column with a GIN
index (``ts_rank``, ``ts_headline``). A title hit counts twice a message hit.

A query is taken literally: its words (letters and digits) are searched for, all of
them, and every other character is ignored, so no input is a syntax error and none
reaches either engine's query language.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .base import SearchHit
from .seam import SqlBase
from .statements import Statements

MARK_START = "\ue000"
MARK_END = "\ue001"
"""Around each matched word of a snippet (private-use characters no text holds)."""

MAX_TERMS = 32
"""Words of a query searched for; the rest are ignored."""

_WORD = re.compile(r"\w+")

_SQLITE_TOP = """
SELECT texts.id, bm25(texts_fts) * (CASE WHEN texts.role='title' THEN 2.0 ELSE 1.0 END) AS score
FROM texts_fts JOIN texts ON texts.id = texts_fts.rowid
JOIN sessions ON sessions.id = texts.session_id
WHERE texts_fts MATCH ? AND NOT sessions.deleted{where}
ORDER BY score, texts.id DESC LIMIT ? OFFSET ?
"""

_SQLITE_HITS = """
SELECT texts.id, texts.session_id, texts.message_id, texts.role,
       snippet(texts_fts, 0, ?, ?, '…', 24),
       sessions.title, sessions.cwd, sessions.updated_at, sessions.archived
FROM texts_fts JOIN texts ON texts.id = texts_fts.rowid
JOIN sessions ON sessions.id = texts.session_id
WHERE texts_fts MATCH ? AND texts_fts.rowid IN ({marks})
"""

_PG_SEARCH = """
WITH q AS (SELECT plainto_tsquery('english', ?) AS q),
top AS (
    SELECT texts.id, texts.session_id, texts.message_id, texts.role, texts.body,
           ts_rank(texts.tsv, q.q) * (CASE WHEN texts.role='title' THEN 2.0 ELSE 1.0 END)
           AS score
    FROM q, texts JOIN sessions ON sessions.id = texts.session_id
    WHERE texts.tsv @@ q.q AND NOT sessions.deleted{where}
    ORDER BY score DESC, texts.id DESC LIMIT ? OFFSET ?
)
SELECT top.id, top.session_id, top.message_id, top.role,
       ts_headline('english', top.body, q.q, ?), sessions.title, sessions.cwd,
       sessions.updated_at, sessions.archived
FROM q, top JOIN sessions ON sessions.id = top.session_id
ORDER BY top.score DESC, top.id DESC
"""

_PG_HEADLINE = (
    f"StartSel={MARK_START}, StopSel={MARK_END}, MaxWords=30, MinWords=10, "
    "ShortWord=2, MaxFragments=1, FragmentDelimiter=…"
)


def query_terms(query: str) -> list[str]:
    """The words a query searches for (none: nothing to search)."""
    return _WORD.findall(query)[:MAX_TERMS]


def _hit(r: Sequence[object]) -> SearchHit:
    return SearchHit(
        session_id=str(r[1]),
        message_id=None if r[2] is None else str(r[2]),
        role=str(r[3]),
        snippet=str(r[4] or ""),
        title=None if r[5] is None else str(r[5]),
        cwd=str(r[6]),
        updated_at=str(r[7]),
        archived=bool(r[8]),
    )


class SearchOps(SqlBase):
    """`store.base.SessionStore.search`."""

    def search(
        self, terms: Sequence[str], cwd: str | None, limit: int, offset: int
    ) -> list[SearchHit]:
        """Ranked hits, best first; every term must match (`query_terms` makes them)."""
        self._need_catalog()
        if not terms:
            return []
        where, extra = ("", ()) if cwd is None else (" AND sessions.cwd=?", (self._text(cwd),))
        if self.dialect.fts == "fts5":
            match = " ".join(f'"{t}"' for t in terms)

            def work(db: Statements) -> list[SearchHit]:
                top = db.all(_SQLITE_TOP.format(where=where), (match, *extra, limit, offset))
                if not top:
                    return []
                order = {int(r[0]): i for i, r in enumerate(top)}
                marks = ",".join("?" * len(order))
                rows = db.all(
                    _SQLITE_HITS.format(marks=marks), (MARK_START, MARK_END, match, *order)
                )
                rows.sort(key=lambda r: order[int(r[0])])
                return [_hit(r) for r in rows]

            return self._snapshot(work)
        words = " ".join(terms)
        rows = self._read(
            lambda db: db.all(
                _PG_SEARCH.format(where=where), (words, *extra, limit, offset, _PG_HEADLINE)
            )
        )
        return [_hit(r) for r in rows]
