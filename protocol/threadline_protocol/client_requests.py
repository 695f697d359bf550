"""What the server asks of the client: permission, the editor's files, client-defined
tools, and withdrawing a request it no longer waits for."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool

from .base import WireModel, meta_field
from .content import ContentBlock
from .updates import ToolCallLocation


class PermissionOption(WireModel):
    option_id: str
    name: str
    kind: Literal["allow_once", "allow_always", "reject_once", "reject_always"]


class PermissionToolCall(WireModel):
    """ACP ``ToolCallUpdate`` as it appears in a permission request."""

    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    raw_input: Any = None
    locations: list[ToolCallLocation] | None = None


class RequestPermissionParams(WireModel):
    session_id: str
    tool_call: PermissionToolCall
    options: list[PermissionOption]


class PermissionSelected(WireModel):
    outcome: Literal["selected"] = "selected"
    option_id: str


class PermissionCancelled(WireModel):
    outcome: Literal["cancelled"] = "cancelled"


class RequestPermissionResult(WireModel):
    outcome: PermissionSelected | PermissionCancelled = Field(discriminator="outcome")


class ReadTextFileParams(WireModel):
    """ACP ``fs/read_text_file``: ``line`` is 1-based, ``limit`` a number of lines."""

    session_id: str
    path: str
    line: int | None = None
    limit: int | None = None


class ReadTextFileResult(WireModel):
    content: str


class WriteTextFileParams(WireModel):
    session_id: str
    path: str
    content: str


class ToolCallCall(WireModel):
    """A client-defined tool call (``tool/call``)."""

    session_id: str
    tool_call_id: str
    name: str
    arguments: dict[str, Any]


class ToolCallCallResult(WireModel):
    content: list[ContentBlock] = Field(default_factory=list)
    is_error: StrictBool = False
    """A JSON boolean: ``"no"`` is refused, not read as an error (nor as success)."""


class CancelRequestParams(WireModel):
    """ACP's ``$/cancel_request``: withdraw a request (sent to ACP clients)."""

    request_id: str | int
    meta: dict[str, Any] | None = meta_field()


class LspCancelParams(WireModel):
    """LSP's ``$/cancelRequest``: withdraw a request (sent to LSP clients)."""

    id: str | int
