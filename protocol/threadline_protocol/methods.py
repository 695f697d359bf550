"""Params and results of every method, and the method table that ties them together."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, StrictBool, field_validator, model_validator

from .base import Prewritten, StrictWireModel, WireModel, meta_field
from .content import ContentBlock
from .messages import Message, StopReason, Usage
from .meta import CompactResultMeta, McpMeta, PromptResultMeta, ThreadlineBlock
from .updates import SessionNotification, ToolCallContent, ToolCallLocation
from .versions import PROTOCOL_VERSION as PROTOCOL_VERSION
from .versions import THREADLINE_PROTOCOL_VERSION as THREADLINE_PROTOCOL_VERSION
from .work import (
    CreateTerminalParams,
    CreateTerminalResult,
    SessionModeState,
    TerminalOutputResult,
    TerminalRef,
    WaitForExitResult,
)

# -- initialize ----------------------------------------------------------------------


class FileSystemCapability(WireModel):
    read_text_file: bool = False
    write_text_file: bool = False


class ThreadlineClientCapabilities(StrictWireModel):
    """``clientCapabilities._meta.threadline``: what a client says about itself."""

    cancel_method: Literal["$/cancel_request", "$/cancelRequest"] | None = None
    """How the server withdraws its requests to this client. Unset: by the framing
    (newline-delimited → ACP's ``$/cancel_request``, ``Content-Length`` → LSP's
    ``$/cancelRequest``)."""


class ClientSessionCapabilities(WireModel):
    compaction: dict[str, Any] | None = None
    """ACP's ``session.compaction``: ``{}`` when the client shows ``compaction_update``.
    Without it a compaction shows only its summary, as an agent message."""


class ClientCapabilities(WireModel):
    fs: FileSystemCapability = Field(default_factory=FileSystemCapability)
    terminal: bool = False
    session: ClientSessionCapabilities | None = None
    meta: dict[str, Any] | None = meta_field()

    def threadline(self) -> ThreadlineClientCapabilities:
        raw = (self.meta or {}).get("threadline") or {}
        return ThreadlineClientCapabilities.model_validate(raw)


class Implementation(WireModel):
    name: str
    version: str | None = None
    title: str | None = None


class InitializeParams(StrictWireModel):
    """ACP ``InitializeRequest``; LSP-style keys are accepted too."""

    protocol_version: int = PROTOCOL_VERSION
    client_capabilities: ClientCapabilities = Field(default_factory=ClientCapabilities)
    client_info: Implementation | None = None
    process_id: int | None = None
    capabilities: dict[str, Any] | None = None
    initialization_options: dict[str, Any] | None = None
    meta: dict[str, Any] | None = meta_field()


class PromptCapabilities(WireModel):
    image: bool = False
    audio: bool = False
    embedded_context: bool = True


class McpCapabilities(WireModel):
    http: bool = False
    sse: bool = False


class ModelInfo(WireModel):
    model_id: str
    name: str
    description: str | None = None


class ThreadlineCapabilities(ThreadlineBlock):
    """Threadline's extension block under ``agentCapabilities._meta.threadline``.

    Every key is always sent (``engine/capabilities.py``), so none is optional here."""

    protocol_version: str
    """Threadline's own protocol version (``THREADLINE_PROTOCOL_VERSION``)."""
    interrupt: bool
    """``session/interrupt`` is served."""
    compact: bool
    """``session/compact`` is served."""
    history: bool
    """``session/history`` is served."""
    fork: bool
    """``session/fork`` is served."""
    models: list[ModelInfo]
    """The models ``session/new`` accepts (``_meta.threadline.model``)."""
    default_model: str
    """The model a session gets when it names none."""


class AgentCapabilitiesMeta(WireModel):
    threadline: ThreadlineCapabilities | None = None


class SessionCapabilities(WireModel):
    list: dict[str, Any] | None = None
    resume: dict[str, Any] | None = None
    close: dict[str, Any] | None = None
    delete: dict[str, Any] | None = None
    fork: dict[str, Any] | None = None


class AgentCapabilities(WireModel):
    load_session: bool = True
    prompt_capabilities: PromptCapabilities = Field(default_factory=PromptCapabilities)
    mcp_capabilities: McpCapabilities = Field(default_factory=McpCapabilities)
    session_capabilities: SessionCapabilities = Field(default_factory=SessionCapabilities)
    meta: AgentCapabilitiesMeta | None = meta_field()


class InitializeResult(WireModel):
    protocol_version: int = PROTOCOL_VERSION
    agent_capabilities: AgentCapabilities
    auth_methods: list[dict[str, Any]] = Field(default_factory=list)
    agent_info: Implementation
    server_info: Implementation


# -- sessions ------------------------------------------------------------------------


class EnvVariable(WireModel):
    name: str
    value: str


class HttpHeader(WireModel):
    name: str
    value: str


class McpServerStdio(WireModel):
    name: str
    command: str
    args: list[str] = Field(default_factory=list)
    env: list[EnvVariable] = Field(default_factory=list)


class McpServerHttp(WireModel):
    type: Literal["http", "sse"]
    name: str
    url: str
    headers: list[HttpHeader] = Field(default_factory=list)


McpServer = McpServerHttp | McpServerStdio


class ToolDefinition(WireModel):
    """A client-defined (or exit) tool declared at ``session/new``."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    parallelizable: bool = True
    needs_approval: bool = False
    timeout: float = Field(default=120.0, gt=0, le=3600)
    """Seconds the client gets to answer ``tool/call`` before the call fails."""
    always_offer: bool = False
    """Offer this tool on every model call. Otherwise each call is offered only the
    tools relevant to the request (as many as the model handles well), and the rest
    through ``find_tools``."""


class ThreadlineSessionOptions(StrictWireModel):
    """``_meta.threadline`` of ``session/new``."""

    model: str | None = None
    system_prompt: str | None = None
    tools: list[ToolDefinition] = Field(default_factory=list)
    exit_tools: list[ToolDefinition] = Field(default_factory=list)
    tool_budget: int = Field(default=25, ge=0, le=10_000)
    auto_compact: bool | float = True
    strict_tools: bool = False
    builtin_tools: bool | list[str] = True
    """Server-side tools: workspace (read_file, list_directory, search_text, write_file
    when the client can write) and memory (remember, forget); True, False or names."""
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    temperature: float | None = Field(default=None, ge=0, le=2)


def _absolute(cwd: str) -> str:
    if not cwd.startswith("/") and not (len(cwd) > 2 and cwd[1] == ":"):
        raise ValueError("cwd must be an absolute path")
    return cwd


class NewSessionParams(StrictWireModel):
    cwd: str
    mcp_servers: list[McpServer] = Field(default_factory=list)
    meta: dict[str, Any] | None = meta_field()

    @field_validator("cwd")
    @classmethod
    def _cwd_is_absolute(cls, value: str) -> str:
        return _absolute(value)

    def threadline(self) -> ThreadlineSessionOptions:
        raw = (self.meta or {}).get("threadline") or {}
        return ThreadlineSessionOptions.model_validate(raw)


class SessionModelState(WireModel):
    current_model_id: str
    available_models: list[ModelInfo]


class ConfigSelectOption(WireModel):
    value: str
    name: str
    description: str | None = None


class SessionConfigOption(WireModel):
    """ACP select config option; Threadline offers ``model``."""

    id: str
    name: str
    type: Literal["select"] = "select"
    category: str | None = None
    description: str | None = None
    current_value: str
    options: list[ConfigSelectOption]


class NewSessionResult(WireModel):
    session_id: str
    modes: SessionModeState | None = None
    models: SessionModelState | None = None
    config_options: list[SessionConfigOption] | None = None
    meta: McpMeta | None = meta_field()


class SetConfigOptionResult(WireModel):
    config_options: list[SessionConfigOption]
    meta: McpMeta | None = meta_field()


class SessionRef(StrictWireModel):
    """Params of the methods that take only a session id."""

    session_id: str = Field(min_length=1)


class PromptParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    prompt: list[ContentBlock] = Field(min_length=1)
    meta: dict[str, Any] | None = meta_field()


class PromptResult(WireModel):
    stop_reason: StopReason
    usage: Usage | None = None
    meta: PromptResultMeta | None = meta_field()


class InterruptResult(WireModel):
    interrupted: bool
    turn_id: str | None = None


class ForkParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    message_id: str | None = None
    cwd: str | None = None

    @field_validator("cwd")
    @classmethod
    def _cwd_is_absolute(cls, value: str | None) -> str | None:
        return None if value is None else _absolute(value)


class ForkResult(WireModel):
    session_id: str
    parent_session_id: str
    forked_at_message_id: str | None


class CompactParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    instructions: str | None = None
    keep_turns: int = Field(default=2, ge=0, le=1000)


class CompactResult(WireModel):
    summary: str
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    meta: CompactResultMeta | None = meta_field()
    """``threadline.compacted`` is false (with ``reason``) when nothing changed."""


class HistoryResult(Prewritten):
    messages: list[Message]
    """The server fills this with the JSON it keeps of each message (``Prewritten``)."""


class ContextParts(WireModel):
    """Tokens of the next request by part; they add up to ``used``."""

    system: int
    """The system message: system prompt, remembered notes, the tool section."""
    tools: int
    """The definitions of the tools this request would offer."""
    history: int
    """The messages a model sees (what compaction has not replaced)."""
    summary: int
    """The latest compaction's summary."""


class ContextResult(WireModel):
    used: int
    size: int
    """The model's context window."""
    parts: ContextParts


class LoadSessionParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    cwd: str | None = None
    mcp_servers: list[McpServer] = Field(default_factory=list)

    @field_validator("cwd")
    @classmethod
    def _cwd_is_absolute(cls, value: str | None) -> str | None:
        return None if value is None else _absolute(value)


class ListSessionsParams(StrictWireModel):
    cwd: str | None = None
    cursor: str | None = None


class SessionInfoMeta(ThreadlineBlock):
    """``_meta`` of a ``session/list`` entry: every key always sent, null when unknown."""

    parent_session_id: str | None
    """The session this one was forked from (null unless a fork)."""
    forked_at_message_id: str | None
    """The parent's message a fork branches at (null unless a fork, or a fork of an
    empty session)."""
    message_count: int
    model: str | None
    """The session's model (null for a session stored without one)."""


class SessionInfo(WireModel):
    session_id: str
    cwd: str
    title: str | None = None
    updated_at: str
    meta: SessionInfoMeta | None = meta_field()


class ListSessionsResult(WireModel):
    sessions: list[SessionInfo]
    next_cursor: str | None = None


class SetConfigOptionParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    config_id: str = Field(min_length=1)
    value: Any


class EmptyResult(WireModel):
    """ACP responses with no fields (``{}``)."""


class LoadSessionResult(WireModel):
    """``session/load`` and ``session/resume``: ``{}``, with MCP failures if any."""

    meta: McpMeta | None = meta_field()


# -- server -> client ------------------------------------------------------------------


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


class CancelRequestParams(WireModel):
    """ACP's ``$/cancel_request``: withdraw a request (sent to ACP clients)."""

    request_id: str | int
    meta: dict[str, Any] | None = meta_field()


class LspCancelParams(WireModel):
    """LSP's ``$/cancelRequest``: withdraw a request (sent to LSP clients)."""

    id: str | int


Dispatch = Literal["inline", "task", "notification", "connection"]
"""How the server serves a client→server method:

* ``inline``: answered as its frame is read, so pipelined requests are answered in
  the order they came (``session/new`` then ``session/prompt`` in one write);
* ``task``: run in a task of its own that sends its own answer, so a later request is
  not held up behind it, and ``session/interrupt`` is answered only after the prompt
  it stopped;
* ``notification``: handled as it is read; never answered;
* ``connection``: handled by the connection itself (``exit``, withdrawing requests),
  not by the engine."""


class MethodSpec(BaseModel):
    """One row of the method table: direction, params and result models, and how the
    server serves it (``dispatch``, for client→server methods only)."""

    name: str
    direction: Literal["client_to_server", "server_to_client"]
    kind: Literal["request", "notification"]
    params: type[BaseModel] | None
    result: type[BaseModel] | None
    description: str
    dispatch: Dispatch | None = None

    @model_validator(mode="after")
    def _dispatch_fits(self) -> MethodSpec:
        if self.direction == "server_to_client":
            if self.dispatch is not None and self.dispatch != "connection":
                raise ValueError(f"{self.name}: the server does not serve its own requests")
        elif self.dispatch is None:
            raise ValueError(f"{self.name}: a client→server method needs a dispatch")
        elif (self.kind == "notification") != (self.dispatch in ("notification", "connection")):
            raise ValueError(f"{self.name}: a {self.kind} cannot be dispatched {self.dispatch}")
        return self


def _m(
    name: str,
    params: type[BaseModel] | None,
    result: type[BaseModel] | None,
    description: str,
    *,
    dispatch: Dispatch | None = None,
    kind: Literal["request", "notification"] = "request",
    direction: Literal["client_to_server", "server_to_client"] = "client_to_server",
) -> MethodSpec:
    return MethodSpec(
        name=name,
        direction=direction,
        kind=kind,
        params=params,
        result=result,
        description=description,
        dispatch=dispatch,
    )


METHODS: dict[str, MethodSpec] = {
    m.name: m
    for m in (
        _m(
            "initialize",
            InitializeParams,
            InitializeResult,
            "Handshake; must come first.",
            dispatch="inline",
        ),
        _m("shutdown", None, None, "Prepare to exit; answers null.", dispatch="task"),
        _m("exit", None, None, "End the process.", kind="notification", dispatch="connection"),
        _m("session/new", NewSessionParams, NewSessionResult, "Open a session.", dispatch="inline"),
        _m(
            "session/prompt",
            PromptParams,
            PromptResult,
            "Run one turn; streams updates.",
            dispatch="task",
        ),
        _m(
            "session/interrupt",
            SessionRef,
            InterruptResult,
            "Stop the running turn.",
            dispatch="task",
        ),
        _m(
            "session/cancel",
            SessionRef,
            None,
            "ACP's interrupt.",
            kind="notification",
            dispatch="notification",
        ),
        _m(
            "session/fork",
            ForkParams,
            ForkResult,
            "Branch a session at a message.",
            dispatch="inline",
        ),
        _m(
            "session/compact",
            CompactParams,
            CompactResult,
            "Summarise older history.",
            dispatch="task",
        ),
        _m(
            "session/history",
            SessionRef,
            HistoryResult,
            "The whole transcript.",
            dispatch="inline",
        ),
        _m(
            "session/context",
            SessionRef,
            ContextResult,
            "The next request's size by part (system, tools, history, summary).",
            dispatch="task",
        ),
        _m(
            "session/load",
            LoadSessionParams,
            LoadSessionResult,
            "Replay history as updates.",
            dispatch="inline",
        ),
        _m(
            "session/resume",
            LoadSessionParams,
            LoadSessionResult,
            "Reattach without replay.",
            dispatch="inline",
        ),
        _m(
            "session/list",
            ListSessionsParams,
            ListSessionsResult,
            "Sessions, newest first.",
            dispatch="inline",
        ),
        _m(
            "session/close",
            SessionRef,
            EmptyResult,
            "Free a session's live state.",
            dispatch="task",
        ),
        _m("session/delete", SessionRef, EmptyResult, "Delete a session.", dispatch="task"),
        _m(
            "session/set_config_option",
            SetConfigOptionParams,
            SetConfigOptionResult,
            "Change a session option such as the model.",
            dispatch="inline",
        ),
        _m(
            "session/update",
            SessionNotification,
            None,
            "Streamed session updates.",
            kind="notification",
            direction="server_to_client",
        ),
        _m(
            "session/request_permission",
            RequestPermissionParams,
            RequestPermissionResult,
            "Ask the user before a tool runs.",
            direction="server_to_client",
        ),
        _m(
            "fs/read_text_file",
            ReadTextFileParams,
            ReadTextFileResult,
            "Read a file as the editor has it (unsaved text included).",
            direction="server_to_client",
        ),
        _m(
            "fs/write_text_file",
            WriteTextFileParams,
            EmptyResult,
            "Write a file through the editor.",
            direction="server_to_client",
        ),
        _m(
            "terminal/create",
            CreateTerminalParams,
            CreateTerminalResult,
            "Run a command in the client's terminal (clients that advertised terminal).",
            direction="server_to_client",
        ),
        _m(
            "terminal/output",
            TerminalRef,
            TerminalOutputResult,
            "A client terminal's output so far, and its exit status once it exited.",
            direction="server_to_client",
        ),
        _m(
            "terminal/wait_for_exit",
            TerminalRef,
            WaitForExitResult,
            "Wait until a client terminal's command exits.",
            direction="server_to_client",
        ),
        _m(
            "terminal/kill",
            TerminalRef,
            EmptyResult,
            "Kill a client terminal's command; the terminal stays until released.",
            direction="server_to_client",
        ),
        _m(
            "terminal/release",
            TerminalRef,
            EmptyResult,
            "Free a client terminal (killing its command if it still runs).",
            direction="server_to_client",
        ),
        _m(
            "tool/call",
            ToolCallCall,
            ToolCallCallResult,
            "Run a client-defined tool.",
            direction="server_to_client",
        ),
        _m(
            "$/cancel_request",
            CancelRequestParams,
            None,
            "Withdraw a request (to ACP clients; accepted from any client).",
            kind="notification",
            direction="server_to_client",
            dispatch="connection",
        ),
        _m(
            "$/cancelRequest",
            LspCancelParams,
            None,
            "Withdraw a request (to LSP clients; accepted from any client).",
            kind="notification",
            direction="server_to_client",
            dispatch="connection",
        ),
    )
}
