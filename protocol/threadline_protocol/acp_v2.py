"""ACP v2: the messages Threadline sends and receives on a connection that negotiated
``protocolVersion: 2``, written from ACP's ``schema/v2`` (stable) and its migration guide.

These are Threadline's own models of the v2 shapes it uses, not a copy of ACP's schema.
Two kinds:

* what a client sends (``*Request``): unknown keys are ignored, as v2 asks of
  receivers (a future field must not break an older agent);
* what the server sends (``*Response``, every ``session/update`` kind): closed
  (``extra="forbid"``), so a key the server adds that v2 does not define at that level
  fails validation (the conformance suite validates every message with these).

Threadline's own data rides in ``_meta._threadline`` on v2 (ACP reserves every other
name at a type's root and asks extensions for ``_``-prefixed names); its own methods
are ``_threadline/…`` (``acp_v2_methods.py``).
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from .base import StrictWireModel
from .meta import ThreadlineBlock

PROTOCOL_VERSION_2 = 2

META_KEY = "_threadline"
"""Where Threadline's ``_meta`` block lives on v2 (``threadline`` on v1)."""

Meta = dict[str, Any] | None
StopReasonV2 = str
"""``end_turn``, ``max_tokens``, ``max_turn_requests``, ``refusal``, ``cancelled``, or a
``_``-prefixed value of Threadline's (``_failed``: the work failed after acceptance)."""

Marker = dict[str, Any]
"""A v2 support marker: an object (``{}``) means supported; absent or null, not."""


def _meta() -> Any:
    return Field(default=None, alias="_meta")


class V2Out(ThreadlineBlock):
    """A message the server sends: camelCase, closed (the config of Threadline's own
    ``_meta`` blocks, which are closed for the same reason)."""


class V2In(StrictWireModel):
    """A message a client sends: camelCase, unknown keys ignored."""


def _base64(value: str) -> str:
    """RFC 4648 base64 (v2's terminal bytes)."""
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not base64: {exc}") from exc
    return value


def _absolute(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError("must be an absolute path")
    return value


# -- initialize ---------------------------------------------------------------------------


class Implementation(V2Out):
    """``info`` on both sides (required in v2)."""

    name: str
    title: str | None = None
    version: str
    meta: Meta = _meta()


class ClientInfo(V2In):
    name: str
    title: str | None = None
    version: str


class ElicitationCapabilitiesV2(V2In):
    form: dict[str, Any] | None = None
    url: dict[str, Any] | None = None


class ClientCapabilitiesV2(V2In):
    auth: dict[str, Any] | None = None
    elicitation: ElicitationCapabilitiesV2 | None = None
    meta: Meta = _meta()


class InitializeRequestV2(V2In):
    protocol_version: int
    info: ClientInfo
    capabilities: ClientCapabilitiesV2 = Field(default_factory=ClientCapabilitiesV2)
    meta: Meta = _meta()


class PromptCapabilitiesV2(V2Out):
    image: Marker | None = None
    audio: Marker | None = None
    embedded_context: Marker | None = None
    meta: Meta = _meta()


class McpCapabilitiesV2(V2Out):
    stdio: Marker | None = None
    http: Marker | None = None
    meta: Meta = _meta()


class SessionCapabilitiesV2(V2Out):
    """Present: the baseline (new, list, resume, close, prompt, cancel, update)."""

    prompt: PromptCapabilitiesV2 | None = None
    mcp: McpCapabilitiesV2 | None = None
    delete: Marker | None = None
    additional_directories: Marker | None = None
    meta: Meta = _meta()


class AgentCapabilitiesV2(V2Out):
    session: SessionCapabilitiesV2 | None = None
    auth: Marker | None = None
    meta: Meta = _meta()


class InitializeResponseV2(V2Out):
    protocol_version: int
    info: Implementation
    capabilities: AgentCapabilitiesV2
    auth_methods: list[dict[str, Any]] = Field(default_factory=list[dict[str, Any]])
    meta: Meta = _meta()


# -- sessions -------------------------------------------------------------------------------


class EnvVariableV2(V2In):
    name: str
    value: str


class McpServerStdioV2(V2In):
    type: Literal["stdio"]
    name: str
    command: str
    args: list[str] = Field(default_factory=list[str])
    env: list[EnvVariableV2] = Field(default_factory=list[EnvVariableV2])


class McpServerHttpV2(V2In):
    type: Literal["http"]
    name: str
    url: str
    headers: list[EnvVariableV2] = Field(default_factory=list[EnvVariableV2])


McpServerV2 = Annotated[McpServerStdioV2 | McpServerHttpV2, Field(discriminator="type")]


class _Environment(V2In):
    cwd: str
    additional_directories: list[str] = Field(default_factory=list[str])
    mcp_servers: list[McpServerV2] = Field(default_factory=list[McpServerV2])
    meta: Meta = _meta()

    @field_validator("cwd")
    @classmethod
    def _cwd_is_absolute(cls, value: str) -> str:
        return _absolute(value)


class NewSessionRequestV2(_Environment):
    pass


class ReplayFrom(V2In):
    """``{"type": "start"}``: replay the whole conversation before answering."""

    type: str
    meta: Meta = _meta()


class ResumeSessionRequestV2(_Environment):
    session_id: str = Field(min_length=1)
    replay_from: ReplayFrom | None = None

    @field_validator("replay_from")
    @classmethod
    def _known_cursor(cls, value: ReplayFrom | None) -> ReplayFrom | None:
        if value is not None and value.type != "start":
            raise ValueError(f"unknown replay cursor {value.type!r} (Threadline knows 'start')")
        return value


class ConfigSelectOptionV2(V2Out):
    value: str
    name: str
    description: str | None = None
    meta: Meta = _meta()


class SessionConfigOptionV2(V2Out):
    """A select (``options``, a string ``currentValue``) or a boolean toggle."""

    config_id: str
    name: str
    description: str | None = None
    category: str | None = None
    type: Literal["select", "boolean"]
    current_value: str | bool
    options: list[ConfigSelectOptionV2] | None = None
    meta: Meta = _meta()

    @model_validator(mode="after")
    def _shape(self) -> SessionConfigOptionV2:
        if (self.type == "select") != (self.options is not None):
            raise ValueError("a select has options; a boolean has none")
        if isinstance(self.current_value, bool) != (self.type == "boolean"):
            raise ValueError("currentValue is a boolean exactly for a boolean option")
        return self


class NewSessionResponseV2(V2Out):
    session_id: str
    config_options: list[SessionConfigOptionV2] | None = None
    meta: Meta = _meta()


class ResumeSessionResponseV2(V2Out):
    config_options: list[SessionConfigOptionV2] | None = None
    meta: Meta = _meta()


class SetConfigOptionRequestV2(V2In):
    session_id: str = Field(min_length=1)
    config_id: str = Field(min_length=1)
    type: Literal["id", "boolean"] = "id"
    value: str | bool
    meta: Meta = _meta()


class SetConfigOptionResponseV2(V2Out):
    config_options: list[SessionConfigOptionV2]
    meta: Meta = _meta()


class PromptRequestV2(V2In):
    session_id: str = Field(min_length=1)
    prompt: list[dict[str, Any]] = Field(min_length=1)
    meta: Meta = _meta()


class EmptyResponseV2(V2Out):
    """``session/prompt`` (accepted), ``session/close``, ``session/delete``: ``{}``."""

    meta: Meta = _meta()


class SessionRefV2(V2In):
    session_id: str = Field(min_length=1)
    meta: Meta = _meta()


class ListSessionsRequestV2(V2In):
    cwd: str | None = None
    cursor: str | None = None
    meta: Meta = _meta()


class SessionInfoV2(V2Out):
    session_id: str
    cwd: str
    additional_directories: list[str] | None = None
    title: str | None = None
    updated_at: str | None = None
    meta: Meta = _meta()


class ListSessionsResponseV2(V2Out):
    sessions: list[SessionInfoV2]
    next_cursor: str | None = None
    meta: Meta = _meta()


class PermissionOptionV2(V2Out):
    option_id: str
    name: str
    kind: str
    meta: Meta = _meta()


class ToolCallSubject(V2Out):
    type: Literal["tool_call"] = "tool_call"
    tool_call: ToolCallFields


class RequestPermissionRequestV2(V2Out):
    session_id: str
    title: str
    description: str | None = None
    subject: ToolCallSubject | None = None
    options: list[PermissionOptionV2] = Field(min_length=1)
    meta: Meta = _meta()


# -- session/update -------------------------------------------------------------------------


class _Update(V2Out):
    meta: Meta = _meta()


class MessageChunk(_Update):
    session_update: Literal["user_message_chunk", "agent_message_chunk", "agent_thought_chunk"]
    message_id: str
    content: dict[str, Any]


class WholeMessage(_Update):
    """An upsert by ``messageId``: ``content`` replaces what the message held."""

    session_update: Literal["user_message", "agent_message", "agent_thought"]
    message_id: str
    content: list[dict[str, Any]] | None = None


class StateUpdate(_Update):
    session_update: Literal["state_update"]
    state: Literal["running", "idle", "requires_action"]
    stop_reason: StopReasonV2 | None = None

    @model_validator(mode="after")
    def _stop_on_idle(self) -> StateUpdate:
        if self.stop_reason is not None and self.state != "idle":
            raise ValueError("only an idle state carries a stopReason")
        return self


class ToolCallFields(V2Out):
    """A tool call's patch: omitted fields stay, ``null`` clears, a value replaces."""

    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: Literal["pending", "in_progress", "completed", "failed", "cancelled"] | None = None
    content: list[dict[str, Any]] | None = None
    locations: list[dict[str, Any]] | None = None
    raw_input: Any = None
    raw_output: Any = None

    meta: Meta = _meta()

    @field_validator("content")
    @classmethod
    def _v2_content(cls, value: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for item in value or []:
            _check_tool_content(item)
        return value


class ToolCallUpdate(ToolCallFields):
    """Creates the call on its first ``toolCallId``; later ones patch it."""

    session_update: Literal["tool_call_update"]


class ToolCallContentChunk(_Update):
    session_update: Literal["tool_call_content_chunk"]
    tool_call_id: str
    content: dict[str, Any]

    @field_validator("content")
    @classmethod
    def _v2_content(cls, value: dict[str, Any]) -> dict[str, Any]:
        _check_tool_content(value)
        return value


class TerminalOutputV2(V2Out):
    """A replacement snapshot of an agent-owned terminal's bytes (base64)."""

    data: str
    meta: Meta = _meta()

    _data_is_base64 = field_validator("data")(_base64)


class TerminalExitStatusV2(V2Out):
    """Present: the command ended (its exit code or signal, when known)."""

    exit_code: int | None = Field(default=None, ge=0)
    signal: str | None = None
    meta: Meta = _meta()


class TerminalUpdate(_Update):
    """An upsert of an agent-owned terminal (a command the sidecar runs) by
    ``terminalId``: omitted fields stay, a value replaces."""

    session_update: Literal["terminal_update"]
    terminal_id: str
    command: str | None = None
    cwd: str | None = None
    output: TerminalOutputV2 | None = None
    exit_status: TerminalExitStatusV2 | None = None

    @field_validator("cwd")
    @classmethod
    def _cwd_is_absolute(cls, value: str | None) -> str | None:
        return None if value is None else _absolute(value)


class TerminalOutputChunk(_Update):
    """Bytes appended to an agent-owned terminal's output (each chunk its own base64)."""

    session_update: Literal["terminal_output_chunk"]
    terminal_id: str
    data: str

    _data_is_base64 = field_validator("data")(_base64)


def _check_tool_content(item: dict[str, Any]) -> None:
    """v2's tool call content: ``content`` (a block), ``diff`` (``changes``, optional
    ``patch``; never v1's ``oldText``/``newText``) or ``terminal`` (a reference)."""
    kind = item.get("type")
    allowed = {
        "content": {"type", "content", "_meta"},
        "diff": {"type", "changes", "patch", "_meta"},
        "terminal": {"type", "terminalId", "_meta"},
    }.get(str(kind))
    if allowed is None:
        raise ValueError(f"unknown tool call content type {kind!r}")
    extra = set(item) - allowed
    if extra:
        raise ValueError(f"{kind} content has keys v2 does not define: {sorted(extra)}")
    if kind == "diff" and not isinstance(item.get("changes"), list):
        raise ValueError("a v2 diff needs changes")


class PlanEntryV2(V2Out):
    content: str
    priority: str
    status: str
    meta: Meta = _meta()


class PlanItems(V2Out):
    type: Literal["items"]
    plan_id: str
    entries: list[PlanEntryV2]
    meta: Meta = _meta()


class PlanUpdate(_Update):
    session_update: Literal["plan_update"]
    plan: PlanItems


class CommandInput(V2Out):
    type: Literal["text"]
    hint: str
    meta: Meta = _meta()


class AvailableCommandV2(V2Out):
    name: str
    description: str
    input: CommandInput | None = None
    meta: Meta = _meta()


class AvailableCommandsUpdateV2(_Update):
    session_update: Literal["available_commands_update"]
    available_commands: list[AvailableCommandV2]


class ConfigOptionUpdate(_Update):
    session_update: Literal["config_option_update"]
    config_options: list[SessionConfigOptionV2]


class SessionInfoUpdateV2(_Update):
    session_update: Literal["session_info_update"]
    title: str | None = None
    updated_at: str | None = None


class CostV2(V2Out):
    """The session's cumulative cost (ISO 4217 currency; Threadline's is USD)."""

    amount: float
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    meta: Meta = _meta()


class UsageUpdateV2(_Update):
    session_update: Literal["usage_update"]
    used: int = Field(ge=0)
    size: int = Field(ge=0)
    cost: CostV2 | None = None


SessionUpdateV2 = Annotated[
    MessageChunk
    | WholeMessage
    | StateUpdate
    | ToolCallUpdate
    | ToolCallContentChunk
    | TerminalUpdate
    | TerminalOutputChunk
    | PlanUpdate
    | AvailableCommandsUpdateV2
    | ConfigOptionUpdate
    | SessionInfoUpdateV2
    | UsageUpdateV2,
    Field(discriminator="session_update"),
]

UPDATE_KINDS = (
    "agent_message_chunk",
    "agent_thought_chunk",
    "user_message",
    "agent_message",
    "agent_thought",
    "state_update",
    "tool_call_update",
    "tool_call_content_chunk",
    "terminal_update",
    "terminal_output_chunk",
    "plan_update",
    "available_commands_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
)
"""Every ``sessionUpdate`` kind Threadline sends on v2 (a user's message is always whole:
``user_message``, never ``user_message_chunk``)."""


class SessionNotificationV2(V2Out):
    session_id: str
    update: SessionUpdateV2
    meta: Meta = _meta()


RequestPermissionRequestV2.model_rebuild()
ToolCallSubject.model_rebuild()
