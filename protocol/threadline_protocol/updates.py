"""``session/update`` payloads (ACP ``SessionUpdate`` variants plus Threadline's).

``DiffToolCallContent``, ``TerminalToolCallContent``, ``PlanEntry`` and
``CurrentModeUpdate`` live in ``work.py`` (stored blocks use them too) and are
re-exported here."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from .base import WireModel, meta_field
from .content import ContentBlock
from .meta import ChunkMeta, SessionInfoUpdateMeta, ToolCallMeta, ToolCallUpdateMeta
from .sessions import SessionConfigOption
from .work import CurrentModeUpdate as CurrentModeUpdate
from .work import DiffToolCallContent as DiffToolCallContent
from .work import PlanEntry as PlanEntry
from .work import TerminalToolCallContent as TerminalToolCallContent

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ToolCallStatus = Literal["pending", "in_progress", "completed", "failed"]


class ChunkUpdate(WireModel):
    content: ContentBlock
    message_id: str | None = None
    meta: ChunkMeta | None = meta_field()


class AgentMessageChunk(ChunkUpdate):
    session_update: Literal["agent_message_chunk"] = "agent_message_chunk"


class AgentThoughtChunk(ChunkUpdate):
    session_update: Literal["agent_thought_chunk"] = "agent_thought_chunk"


class UserMessageChunk(ChunkUpdate):
    session_update: Literal["user_message_chunk"] = "user_message_chunk"


class ToolCallLocation(WireModel):
    path: str
    line: int | None = None


class ContentToolCallContent(WireModel):
    type: Literal["content"] = "content"
    content: ContentBlock


ToolCallContent = Annotated[
    ContentToolCallContent | DiffToolCallContent | TerminalToolCallContent,
    Field(discriminator="type"),
]


class ToolCallStart(WireModel):
    session_update: Literal["tool_call"] = "tool_call"
    tool_call_id: str
    title: str
    kind: ToolKind = "other"
    status: ToolCallStatus = "pending"
    content: list[ToolCallContent] = Field(default_factory=list)
    locations: list[ToolCallLocation] = Field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None
    meta: ToolCallMeta | None = meta_field()


class ToolCallProgress(WireModel):
    session_update: Literal["tool_call_update"] = "tool_call_update"
    tool_call_id: str
    title: str | None = None
    kind: ToolKind | None = None
    status: ToolCallStatus | None = None
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None
    meta: ToolCallUpdateMeta | None = meta_field()


class Plan(WireModel):
    session_update: Literal["plan"] = "plan"
    entries: list[PlanEntry]


class CommandInput(WireModel):
    hint: str


class AvailableCommand(WireModel):
    name: str
    description: str
    input: CommandInput | None = None


class AvailableCommandsUpdate(WireModel):
    session_update: Literal["available_commands_update"] = "available_commands_update"
    available_commands: list[AvailableCommand]


class SessionInfoUpdate(WireModel):
    session_update: Literal["session_info_update"] = "session_info_update"
    title: str | None = None
    updated_at: str | None = None
    meta: SessionInfoUpdateMeta | None = meta_field()


class Cost(WireModel):
    """ACP's ``Cost``: what the session's model calls cost so far."""

    amount: float
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    """ISO 4217; Threadline's prices are USD."""


class UsageUpdate(WireModel):
    """Context-window use after a model call: ``used`` of ``size`` tokens, and (ACP
    1.21) the session's cumulative cost in USD, present only when its model has a
    ``price`` in threadline.toml."""

    session_update: Literal["usage_update"] = "usage_update"
    used: int
    size: int
    cost: Cost | None = None
    meta: dict[str, Any] | None = meta_field()


class CompactionUpdate(WireModel):
    """ACP's ``compaction_update``: ``summary`` (when completed) is content blocks,
    ``error`` says why it failed."""

    session_update: Literal["compaction_update"] = "compaction_update"
    compaction_id: str
    status: Literal["in_progress", "completed", "failed", "cancelled"]
    summary: list[ContentBlock] | None = None
    error: str | None = None
    meta: dict[str, Any] | None = meta_field()


class ConfigOptionUpdate(WireModel):
    """ACP's ``config_option_update``: every option with its value now, sent when one
    changed (here or in another window)."""

    session_update: Literal["config_option_update"] = "config_option_update"
    config_options: list[SessionConfigOption]
    meta: dict[str, Any] | None = meta_field()


class NoticeUpdate(WireModel):
    """ACP's unstable ``notice``: advisory and live only (a provider's retry…), sent
    only to a client that advertised ``session.notices``."""

    session_update: Literal["notice"] = "notice"
    severity: Literal["info", "warning", "error"]
    title: str = Field(min_length=1)
    description: str | None = None
    meta: dict[str, Any] | None = meta_field()


SessionUpdate = Annotated[
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCallStart
    | ToolCallProgress
    | Plan
    | AvailableCommandsUpdate
    | SessionInfoUpdate
    | UsageUpdate
    | CompactionUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | NoticeUpdate,
    Field(discriminator="session_update"),
]


class SessionNotification(WireModel):
    """Params of the ``session/update`` notification."""

    session_id: str
    update: SessionUpdate
