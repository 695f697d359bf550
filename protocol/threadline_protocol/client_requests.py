"""What the server asks of the client: permission, the editor's files, client-defined
tools, a question for the user (elicitation), and withdrawing a request it no longer
waits for."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool

from .base import WireModel, meta_field
from .content import ContentBlock
from .updates import ToolCallContent, ToolCallLocation


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
    content: list[ToolCallContent] | None = None
    """What the call would do, shown before the user decides (an edit's ``diff``)."""


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


ElicitationValue = StrictBool | int | float | str | list[str]
"""ACP's ``ElicitationContentValue``: what one field of an accepted form holds."""


class ElicitationSchema(WireModel):
    """ACP's ``ElicitationSchema``: a flat object of primitive (or enum) properties.
    Each property is one of ACP's property schemas (``string``, ``number``,
    ``integer``, ``boolean``, ``array`` of enum strings), kept as written."""

    type: Literal["object"] = "object"
    title: str | None = None
    properties: dict[str, dict[str, Any]] = Field(default_factory=dict)
    required: list[str] | None = None


class CreateElicitationParams(WireModel):
    """ACP ``elicitation/create`` (stable since schema 1.21) in form mode, scoped to a
    session and the tool call that asks: a structured question for the user. Sent
    only to clients that advertised ``clientCapabilities.elicitation.form``."""

    session_id: str
    tool_call_id: str | None = None
    mode: Literal["form"]
    message: str
    requested_schema: ElicitationSchema


class CreateElicitationResult(WireModel):
    """ACP ``CreateElicitationResponse``: ``accept`` (with the form's ``content``),
    ``decline`` (the user said no) or ``cancel`` (dismissed without choosing)."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, ElicitationValue] | None = None


class CancelRequestParams(WireModel):
    """ACP's ``$/cancel_request``: withdraw a request (sent to ACP clients)."""

    request_id: str | int
    meta: dict[str, Any] | None = meta_field()


class LspCancelParams(WireModel):
    """LSP's ``$/cancelRequest``: withdraw a request (sent to LSP clients)."""

    id: str | int
