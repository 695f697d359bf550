"""Content blocks: ACP's (MCP-style) prompt blocks and Threadline's transcript blocks."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from .base import WireModel, meta_field
from .work import DiffToolCallContent, PlanEntry, TerminalToolCallContent

ShownContent = Annotated[DiffToolCallContent | TerminalToolCallContent, Field(discriminator="type")]
"""Tool-call content a client is shown besides a call's result (a diff, a terminal)."""


class Annotations(WireModel):
    audience: list[Literal["user", "assistant"]] | None = None
    priority: float | None = None
    last_modified: str | None = None


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = meta_field()


class ImageContent(WireModel):
    """An image: base64 ``data``, or (in a prompt) a ``uri`` of a file inside the
    session's workspace folders, or a ``threadline-blob:<sha256>`` one (a stored image).
    The server checks the bytes (PNG, JPEG, GIF, WebP; size and pixel limits) and sets
    ``mimeType`` from them. In history and replay ``data`` holds the bytes, unless the
    client asked for references (``imageReferences``): then ``data`` is empty and
    ``uri`` names the blob (``session/blob`` fetches it); ``_meta.threadline.image``
    gives ``blob``, ``width``, ``height`` and ``size`` either way."""

    type: Literal["image"] = "image"
    data: str = ""
    mime_type: str
    uri: str | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = meta_field()


class AudioContent(WireModel):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None


class ResourceLink(WireModel):
    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None


class TextResourceContents(WireModel):
    uri: str
    text: str
    mime_type: str | None = None


class BlobResourceContents(WireModel):
    uri: str
    blob: str
    mime_type: str | None = None


class EmbeddedResource(WireModel):
    type: Literal["resource"] = "resource"
    resource: TextResourceContents | BlobResourceContents
    annotations: Annotations | None = None


ContentBlock = Annotated[
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource,
    Field(discriminator="type"),
]
"""What a client may put in a prompt and what a tool may return (ACP ``ContentBlock``)."""


class ThoughtBlock(WireModel):
    """Model reasoning. Provider fields (``signature``, ``redacted``…) are kept verbatim."""

    type: Literal["thought"] = "thought"
    text: str
    signature: str | None = None


class ToolUseBlock(WireModel):
    """A tool call, with what clients were shown of it when it was made (``title``,
    ``kind``, ``locations``, and ``content``: the diff it would make), so
    ``session/load`` replays exactly that."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]
    title: str | None = None
    kind: str | None = None
    locations: list[dict[str, Any]] | None = None
    content: list[ShownContent] | None = None


ToolResultStatus = Literal["completed", "failed", "cancelled"]


class ToolResultBlock(WireModel):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: list[ContentBlock]
    is_error: bool = False
    status: ToolResultStatus = "completed"
    compact_summary: str | None = None
    raw_output: Any = None
    """What the tool returned besides content (ACP ``rawOutput``), as clients saw it."""
    display: list[ShownContent] | None = None
    """Shown to clients before ``content`` in the call's final update (its diff, the
    terminal it ran in); never sent to the model."""
    plan: list[PlanEntry] | None = None
    """The plan an ``update_plan`` call set: shown as ACP's ``plan`` update after the
    call's result, live and on replay; a fork keeps it with the message."""
    child_session_id: str | None = None
    """The child session a ``delegate`` call ran (``_meta.threadline.childSessionId``
    of the call's final update)."""


class ExitSignalBlock(WireModel):
    """A one-way signal the model emitted through an exit tool: recorded, never run."""

    type: Literal["exit_signal"] = "exit_signal"
    id: str | None = None
    name: str
    arguments: dict[str, Any]


class SummaryBlock(WireModel):
    type: Literal["summary"] = "summary"
    text: str
    compaction_id: str | None = None
    """The ``compactionId`` of the ``compaction_update`` that announced it."""


TranscriptBlock = Annotated[
    TextContent
    | ImageContent
    | AudioContent
    | ResourceLink
    | EmbeddedResource
    | ThoughtBlock
    | ToolUseBlock
    | ToolResultBlock
    | ExitSignalBlock
    | SummaryBlock,
    Field(discriminator="type"),
]
"""A block of a message in ``session/history``."""
