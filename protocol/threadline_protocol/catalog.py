"""Finding a session among thousands: rename, archive, tags, search, export and import.

Threadline's own methods (ACP v1 up to schema 1.21 has no rename, archive, search or
export; an unreleased ACP draft names a rename ``session/setTitle`` with the same
params as ``session/set_title`` here). The list filters and the extra keys of a list
entry ride in ``session/list``'s ``_meta.threadline``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, StrictBool, field_validator

from .base import StrictWireModel, WireModel
from .meta import ThreadlineBlock

TAG_PATTERN = r"^[a-z0-9][a-z0-9_.:/-]{0,63}$"
MAX_QUERY = 1000
"""Characters of a search query; a longer one is refused (-32602)."""


class ListFilter(ThreadlineBlock):
    """``_meta.threadline`` of ``session/list``: which sessions to list."""

    archived: bool = False
    """True: only archived sessions; false (the default): only those not archived."""
    tag: str | None = Field(default=None, pattern=TAG_PATTERN)
    """Only sessions with this tag."""


class SetTitleParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    title: str = Field(min_length=1, max_length=200)

    @field_validator("title")
    @classmethod
    def _one_line(cls, value: str) -> str:
        title = " ".join(value.split())
        if not title:
            raise ValueError("title must not be blank")
        return title


class ArchiveParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    archived: StrictBool = True
    """False unarchives."""


class SetTagsParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    tags: list[str] = Field(max_length=32)
    """The session's tags from now on (an empty list removes them): lower-case letters,
    digits and ``_.:/-``, at most 64 characters each."""

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        bad = [t for t in value if not re.fullmatch(TAG_PATTERN, t)]
        if bad:
            raise ValueError(f"tags must be lower case letters, digits and _.:/- ({bad[0]!r})")
        return sorted(set(value))


class SearchParams(StrictWireModel):
    query: str = Field(min_length=1, max_length=MAX_QUERY)
    """Words to find, all of them; other characters are ignored (no query syntax)."""
    cwd: str | None = None
    """Only sessions of this working directory."""
    limit: int = Field(default=20, ge=1, le=100)
    cursor: str | None = None

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must not be blank")
        return value


class SnippetSpan(WireModel):
    text: str
    match: bool
    """A matched word (show it highlighted)."""


class SearchHit(WireModel):
    session_id: str
    message_id: str | None
    """The message that matched; null when the session's title did."""
    role: Literal["user", "assistant", "tool", "title"]
    snippet: list[SnippetSpan]
    """The text around the match, in spans; joined, it is the plain snippet."""
    title: str | None
    cwd: str
    updated_at: str
    archived: bool


class SearchResult(WireModel):
    hits: list[SearchHit]
    """Best first."""
    next_cursor: str | None = None


class ExportParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    format: Literal["markdown", "jsonl"] = "markdown"


class ExportResult(WireModel):
    format: Literal["markdown", "jsonl"]
    content: str


class ImportParams(StrictWireModel):
    content: str = Field(min_length=1)
    """A ``jsonl`` export (``session/export``)."""
    cwd: str | None = None
    """The imported session's working directory (default: the exported one)."""


class ImportResult(WireModel):
    session_id: str
    messages: int
    events: int
