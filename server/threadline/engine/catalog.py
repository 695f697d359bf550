"""Finding a session among thousands: rename, archive, tags, search, export, import.

The engine's operations for them, apart from `Engine` (which delegates in one line
each): they need of the engine only the store, the client link, and a way to open a
session (`open`, fresh from the store) or find one loaded here (`loaded`).

Rename is shown at once to the client that asked, as ACP's ``session_info_update``
with the title; other sidecars read it at their next list, load or turn (their live
copy is refreshed by the freshness check). A standing notice to every window is
issue 27's subscription, not this.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, cast

from threadline_protocol import catalog as cat
from threadline_protocol.methods import EmptyResult

from ..store.base import SearchHit, SessionStore
from ..store.search import MARK_END, MARK_START, query_terms
from . import events
from .errors import InvalidParams, SessionNotFound
from .link import ClientLink
from .session import Session
from .transfer import export_jsonl, export_markdown, read_log

CURSOR = "search:"

Role = Literal["user", "assistant", "tool", "title"]


class Catalog:
    def __init__(
        self,
        store: SessionStore,
        link: ClientLink,
        open: Callable[[str], Session],
        loaded: Callable[[str], Session | None],
    ) -> None:
        self.store = store
        self.link = link
        self._open = open
        self._loaded = loaded

    def set_title(self, params: cat.SetTitleParams) -> EmptyResult:
        row = self.store.get_session(params.session_id)
        if row is None:
            raise SessionNotFound(params.session_id)
        self.store.update_session(row.id, title=params.title)
        live = self._loaded(row.id)
        if live is not None:
            live.title = live.shown.title = params.title  # this client is told just below
        self.link.announce(row.id, events.SessionInfo(row.updated_at, title=params.title))
        return EmptyResult()

    def archive(self, params: cat.ArchiveParams) -> EmptyResult:
        if not self.store.set_archived(params.session_id, params.archived):
            raise SessionNotFound(params.session_id)
        return EmptyResult()

    def set_tags(self, params: cat.SetTagsParams) -> EmptyResult:
        if not self.store.set_tags(params.session_id, params.tags):
            raise SessionNotFound(params.session_id)
        return EmptyResult()

    def search(self, params: cat.SearchParams) -> cat.SearchResult:
        terms = query_terms(params.query)
        if not terms:
            raise InvalidParams(
                "the query has no words to search for (letters or digits)",
                {"query": params.query[:100]},
            )
        offset = _offset(params.cursor)
        found = self.store.search(terms, params.cwd, params.limit + 1, offset)
        result = cat.SearchResult(hits=[_hit(h) for h in found[: params.limit]])
        if len(found) > params.limit:
            result.next_cursor = f"{CURSOR}{offset + params.limit}"
        return result

    def export(self, params: cat.ExportParams) -> cat.ExportResult:
        session = self._open(params.session_id)
        row = self.store.get_session(session.id)
        if row is None:
            raise SessionNotFound(session.id)
        if params.format == "markdown":
            content = export_markdown(row, session.transcript.history())
        else:
            content = export_jsonl(row, self.store.load_events(row.id), self.store.get_blob)
        return cat.ExportResult(format=params.format, content=content)

    def import_log(self, params: cat.ImportParams) -> cat.ImportResult:
        log = read_log(params.content)
        row = self.store.import_session_log(
            log.session_id,
            params.cwd or log.cwd,
            log.title,
            log.config,
            log.tags,
            log.events,
            log.now,
        )
        return cat.ImportResult(
            session_id=row.id, messages=row.message_count, events=len(log.events)
        )


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    rest = cursor.removeprefix(CURSOR)
    if cursor.startswith(CURSOR) and rest.isdigit() and len(rest) < 10:
        return int(rest)
    raise InvalidParams("this search cursor is not one this method gave", {"cursor": cursor})


def _hit(h: SearchHit) -> cat.SearchHit:
    return cat.SearchHit(
        session_id=h.session_id,
        message_id=h.message_id,
        role=cast(Role, h.role),
        snippet=spans(h.snippet),
        title=h.title,
        cwd=h.cwd,
        updated_at=h.updated_at,
        archived=h.archived,
    )


def spans(snippet: str) -> list[cat.SnippetSpan]:
    """A marked snippet (`store.search.MARK_START` … `MARK_END`) as spans."""
    out: list[cat.SnippetSpan] = []
    for i, part in enumerate(snippet.split(MARK_START)):
        if i == 0:
            matched, rest = "", part
        else:
            matched, _, rest = part.partition(MARK_END)
        if matched:
            if out and out[-1].match:
                out[-1].text += matched
            else:
                out.append(cat.SnippetSpan(text=matched, match=True))
        if rest:
            out.append(cat.SnippetSpan(text=rest, match=False))
    return out
