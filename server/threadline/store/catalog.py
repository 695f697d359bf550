"""The catalog: what finds a session among thousands (archive, tags, the first prompt's
first line, and the search index), kept by the store in the transaction that changes
what it describes.

- Messages are indexed by `index_events` inside `append`'s transaction, titles by
  `index_title` inside the write that sets them: the index is never behind the log.
- `upgrade` brings a store of any older schema up to the catalog (the columns of
  `schema.CATALOG_COLUMNS`, the ``texts`` table and its full-text index) and builds the
  index and previews of what it already holds, in the schema set-up's transaction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence

from .codec import loads
from .schema import CATALOG_COLUMNS, search_index
from .seam import SqlBase
from .statements import Dialect, Statements
from .texts import event_messages, preview

TAG = re.compile(r"[a-z0-9][a-z0-9_.:/-]{0,63}")
"""A tag: lower case letters, digits and ``_.:/-``, at most 64 characters."""

MAX_TAGS = 32

MESSAGE_KINDS = (
    "user_message",
    "assistant_message",
    "tool_result",
    "assistant_truncated",
    "tool_cancelled",
    "context_summary",
    "context_replace",
)
"""Event kinds that create messages (``engine/mutations.py``'s)."""

BACKFILL_BATCH = 2000


def tags_json(tags: Iterable[str]) -> str:
    return json.dumps(sorted(set(tags)))


def tag_pattern(tag: str) -> str:
    """A ``LIKE`` pattern that finds ``tag`` in a ``tags`` column (JSON, `tags_json`)."""
    return "%" + json.dumps(tag).replace("_", "\\_") + "%"


def index_events(
    db: Statements,
    session_id: str,
    events: Iterable[tuple[str, object]],
    *,
    want_preview: bool,
    clean: Callable[[str | None], str | None],
) -> str | None:
    """Index the messages the events create (``clean``: what the backend's text columns
    take, `Dialect.text`); returns the preview of the first user message with text
    when ``want_preview``."""
    rows, found = index_rows(events, want_preview=want_preview, clean=clean)
    db.many(
        "INSERT INTO texts(session_id, message_id, role, body) VALUES(?,?,?,?)",
        [(session_id, *r) for r in rows],
    )
    return found


def index_rows(
    events: Iterable[tuple[str, object]],
    *,
    want_preview: bool,
    clean: Callable[[str | None], str | None],
) -> tuple[list[tuple[str, str, str]], str | None]:
    """What `index_events` writes: ``(message id, role, text)`` of each message with
    text, and the preview of the first user message with text (``want_preview``)."""
    rows: list[tuple[str, str, str]] = []
    found: str | None = None
    for kind, payload in events:
        for message_id, role, text in event_messages(kind, payload):
            if text:
                rows.append((message_id, role, clean(text) or ""))
            if want_preview and found is None and role == "user" and text:
                found = preview(text)
    return rows, found


def index_title(db: Statements, session_id: str, title: str | None) -> None:
    db.run("DELETE FROM texts WHERE session_id=? AND role='title'", (session_id,))
    if title:
        db.run(
            "INSERT INTO texts(session_id, message_id, role, body) VALUES(?, NULL, 'title', ?)",
            (session_id, title),
        )


def upgrade(db: Statements, dialect: Dialect, *, backfill: bool) -> None:
    """Add the catalog to a store's tables; with ``backfill`` (a store written before
    it), index every stored title and message and set every session's preview."""
    have = db.columns("sessions")
    for name, decl in CATALOG_COLUMNS:
        if name not in have:
            db.run(f"ALTER TABLE sessions ADD COLUMN {name} {decl.format(**dialect.types)}")
    for statement in search_index(dialect):
        db.run(statement)
    if backfill and db.one("SELECT 1 FROM texts LIMIT 1") is None:
        _backfill(db, dialect)


def _backfill(db: Statements, dialect: Dialect) -> None:
    db.run(
        "INSERT INTO texts(session_id, message_id, role, body) "
        "SELECT id, NULL, 'title', title FROM sessions WHERE title IS NOT NULL AND title<>''"
    )
    kinds = ",".join(f"'{k}'" for k in MESSAGE_KINDS)
    own_first: dict[str, str] = {}
    after = ("", -1)
    while True:
        batch = db.all(
            f"SELECT session_id, seq, kind, payload FROM events WHERE kind IN ({kinds}) "
            "AND (session_id > ? OR (session_id = ? AND seq > ?)) "
            "ORDER BY session_id, seq LIMIT ?",
            (after[0], after[0], after[1], BACKFILL_BATCH),
        )
        if not batch:
            break
        for sid, seq, kind, payload in batch:
            first = index_events(
                db,
                str(sid),
                [(str(kind), loads(payload))],
                want_preview=sid not in own_first,
                clean=dialect.text,
            )
            if first is not None:
                own_first[str(sid)] = first
            after = (str(sid), int(seq))
    forks = {
        str(r[0]): (None if r[1] is None else str(r[1]), int(r[2]))
        for r in db.all("SELECT id, base_id, base_count FROM sessions")
    }
    db.many(
        "UPDATE sessions SET preview=? WHERE id=?",
        [(p, sid) for sid in forks if (p := _preview_of(sid, forks, own_first)) is not None],
    )


def _preview_of(
    sid: str, forks: dict[str, tuple[str | None, int]], own_first: dict[str, str]
) -> str | None:
    """A session's first prompt: in its base's prefix when it has one, else its own."""
    seen: set[str] = set()
    while sid not in seen:
        seen.add(sid)
        base_id, base_count = forks.get(sid, (None, 0))
        if base_id is None or base_count == 0:
            return own_first.get(sid)
        sid = base_id
    return None


class CatalogOps(SqlBase):
    """Archive and tags (`store.base.SessionStore.set_archived`, ``set_tags``)."""

    def set_archived(self, session_id: str, archived: bool) -> bool:
        self._need_catalog()
        flag = "TRUE" if archived else "FALSE"
        return self._write(
            lambda db: (
                db.one(
                    f"UPDATE sessions SET archived={flag} WHERE id=? AND NOT deleted RETURNING id",
                    (session_id,),
                )
                is not None
            )
        )

    def set_tags(self, session_id: str, tags: Sequence[str]) -> bool:
        self._need_catalog()
        value = tags_json(tags)
        return self._write(
            lambda db: (
                db.one(
                    "UPDATE sessions SET tags=? WHERE id=? AND NOT deleted RETURNING id",
                    (value, session_id),
                )
                is not None
            )
        )
