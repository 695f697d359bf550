"""Params and results of the ``session/*`` methods the client sends."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from .base import Prewritten, StrictWireModel, WireModel, meta_field
from .catalog import ListFilter
from .checkpoints import RestoredFiles
from .content import ContentBlock
from .initialize import ModelInfo
from .messages import Message, StopReason, Usage
from .meta import CompactResultMeta, McpMeta, PromptResultMeta, QueuedPrompt, ThreadlineBlock
from .work import SessionModeState


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
    mutating: bool = False
    """A call may change files in the workspace: the session checkpoints the workspace
    before the turn's first such call and after each (``docs/checkpoints.md``)."""
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
    mode: Literal["ask", "plan", "code", "auto"] = "code"
    """The session's first mode (``session/set_mode`` changes it)."""


def _absolute(cwd: str) -> str:
    if not cwd.startswith("/") and not (len(cwd) > 2 and cwd[1] == ":"):
        raise ValueError("cwd must be an absolute path")
    return cwd


def _all_absolute(paths: list[str]) -> list[str]:
    for path in paths:
        _absolute(path)
    return paths


class NewSessionParams(StrictWireModel):
    cwd: str
    additional_directories: list[str] = Field(default_factory=list)
    """ACP's extra workspace roots: the tools may read and write under them as under
    ``cwd`` (which stays the base of relative paths). Each must be absolute."""
    mcp_servers: list[McpServer] = Field(default_factory=list)
    meta: dict[str, Any] | None = meta_field()

    @field_validator("cwd")
    @classmethod
    def _cwd_is_absolute(cls, value: str) -> str:
        return _absolute(value)

    @field_validator("additional_directories")
    @classmethod
    def _roots_are_absolute(cls, value: list[str]) -> list[str]:
        return _all_absolute(value)

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
    """ACP select config option; Threadline offers ``model``, ``mode`` and
    ``builtinTools`` (``on``/``off``)."""

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


WhileRunning = Literal["steer", "queue", "refuse"]


class ThreadlinePromptOptions(StrictWireModel):
    """``_meta.threadline`` of ``session/prompt``."""

    while_running: WhileRunning | None = None
    """What the prompt does if the session is working (here or in another window):
    ``steer`` joins the running turn at its next model call, ``queue`` runs it as the
    next turn, ``refuse`` answers -32010. Unset: the client's
    ``clientCapabilities._meta.threadline.whileRunning``, else ``refuse``."""


class PromptParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    prompt: list[ContentBlock] = Field(min_length=1)
    meta: dict[str, Any] | None = meta_field()

    def threadline(self) -> ThreadlinePromptOptions:
        raw = (self.meta or {}).get("threadline") or {}
        return ThreadlinePromptOptions.model_validate(raw)


class ThreadlineInterruptOptions(StrictWireModel):
    clear_queue: bool = False
    """Also remove every prompt waiting in the session's queue."""


class InterruptParams(StrictWireModel):
    """``session/interrupt`` and ``session/cancel``."""

    session_id: str = Field(min_length=1)
    meta: dict[str, Any] | None = meta_field()

    def threadline(self) -> ThreadlineInterruptOptions:
        raw = (self.meta or {}).get("threadline") or {}
        return ThreadlineInterruptOptions.model_validate(raw)


class QueueListResult(WireModel):
    """``session/queue/list``: the prompts sent while the session worked that have not
    finished, in the order they run."""

    prompts: list[QueuedPrompt]


class QueueUpdateParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    id: str = Field(min_length=1)
    prompt: list[ContentBlock] = Field(min_length=1)


class QueueUpdateResult(WireModel):
    prompt: QueuedPrompt


class QueueRemoveParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    id: str | None = None
    """One prompt; unset: every prompt that has not run."""


class QueueChangeResult(WireModel):
    """The prompts a ``session/queue/remove`` or ``…/resume`` changed."""

    ids: list[str]


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
    additional_directories: list[str] | None = None
    """The fork's extra workspace roots (ACP: the complete list); unset: the parent's."""
    mcp_servers: list[McpServer] = Field(default_factory=list)
    """MCP servers the fork connects to (as ``session/new``'s)."""
    restore_files: bool = False
    """The workspace goes back to the fork point (as ``session/rewind`` does)."""
    materialize_files: bool = False
    """The fork point's files are written into ``cwd``, a new or empty folder."""
    force: bool = False
    """With ``restoreFiles``: restore over files changed since the last checkpoint."""

    @field_validator("cwd")
    @classmethod
    def _cwd_is_absolute(cls, value: str | None) -> str | None:
        return None if value is None else _absolute(value)

    @field_validator("additional_directories")
    @classmethod
    def _roots_are_absolute(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else _all_absolute(value)


class ForkResult(WireModel):
    session_id: str
    parent_session_id: str
    forked_at_message_id: str | None
    files: RestoredFiles | None = None
    """With ``restoreFiles`` or ``materializeFiles``: what was written and deleted."""
    modes: SessionModeState | None = None
    config_options: list[SessionConfigOption] | None = None
    """The fork's mode and options (ACP's ``ForkSessionResponse``)."""
    meta: McpMeta | None = meta_field()


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
    additional_directories: list[str] = Field(default_factory=list)
    """ACP: the complete list of extra roots from now on (empty: none)."""
    mcp_servers: list[McpServer] = Field(default_factory=list)

    @field_validator("cwd")
    @classmethod
    def _cwd_is_absolute(cls, value: str | None) -> str | None:
        return None if value is None else _absolute(value)

    @field_validator("additional_directories")
    @classmethod
    def _roots_are_absolute(cls, value: list[str]) -> list[str]:
        return _all_absolute(value)


class ListSessionsParams(StrictWireModel):
    cwd: str | None = None
    cursor: str | None = None
    meta: dict[str, Any] | None = meta_field()

    def threadline(self) -> ListFilter:
        """``_meta.threadline``: archived, tag (`catalog.ListFilter`)."""
        raw = (self.meta or {}).get("threadline") or {}
        return ListFilter.model_validate(raw)


class SessionInfoMeta(ThreadlineBlock):
    """``_meta`` of a ``session/list`` entry: every key always sent, null when unknown."""

    parent_session_id: str | None
    """The session this one was forked from, or the session whose ``delegate`` call
    started it (null unless a fork or a child)."""
    kind: Literal["session", "child"] = "session"
    """``child``: a sub-agent's session, started by its parent's ``delegate`` call."""
    forked_at_message_id: str | None
    """The parent's message a fork branches at (null unless a fork, or a fork of an
    empty session)."""
    message_count: int
    model: str | None
    """The session's model (null for a session stored without one)."""
    preview: str | None
    """The first line of the first prompt (null before one)."""
    archived: bool
    tags: list[str]


class SessionInfo(WireModel):
    session_id: str
    cwd: str
    additional_directories: list[str] | None = None
    """The session's extra workspace roots (ACP 1.21); absent when it has none."""
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
    """``session/load`` and ``session/resume``: the session's mode and options, with
    MCP failures if any."""

    modes: SessionModeState | None = None
    config_options: list[SessionConfigOption] | None = None
    meta: McpMeta | None = meta_field()
