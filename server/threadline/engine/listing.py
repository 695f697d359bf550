"""``session/list`` paging: pages cut from one snapshot of the ordering, taken at the
first page, so a walk lists every session once even while other processes move them
to the top; rows themselves are read fresh (a session deleted meanwhile is left out)."""

from __future__ import annotations

from collections import OrderedDict

from threadline_protocol.catalog import ListFilter

from ..store.base import SessionRow, SessionStore
from .errors import InvalidParams
from .ids import new_id

LIST_PAGE = 50
LIST_SNAPSHOTS = 32
"""Page walks of ``session/list`` remembered at once (each is a list of ids)."""


class SessionPages:
    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._pages: OrderedDict[str, list[str]] = OrderedDict()

    def page(
        self, cwd: str | None, cursor: str | None, only: ListFilter | None = None
    ) -> tuple[list[SessionRow], str | None]:
        """One page of rows, and the cursor of the next (None at the end); ``only``
        (archived, tag) filters the walk a first page starts."""
        ids, offset = self._walk(cwd, cursor, only or ListFilter())
        wanted = ids[offset : offset + LIST_PAGE]
        found = self.store.get_sessions(wanted)
        rows = [found[i] for i in wanted if i in found]
        end = offset + LIST_PAGE
        if end >= len(ids):
            return rows, None
        token = cursor.split(":")[1] if cursor else new_id("page")
        self._pages[token] = ids
        self._pages.move_to_end(token)
        while len(self._pages) > LIST_SNAPSHOTS:
            self._pages.popitem(last=False)
        return rows, f"page:{token}:{end}"

    def _walk(self, cwd: str | None, cursor: str | None, only: ListFilter) -> tuple[list[str], int]:
        if cursor is None:
            return self.store.list_session_ids(cwd, archived=only.archived, tag=only.tag), 0
        parts = cursor.split(":")
        if len(parts) == 3 and parts[0] == "page" and parts[2].isdigit():
            ids = self._pages.get(parts[1])
            if ids is not None:
                return ids, int(parts[2])
        raise InvalidParams(
            "this list cursor has expired or is not one this sidecar gave; list again "
            "from the first page",
            {"cursor": cursor},
        )
