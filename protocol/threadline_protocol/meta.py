"""The ``_meta`` blocks Threadline adds to ACP's messages, typed so the schema says
exactly which keys each one carries.

ACP reserves ``_meta`` for extensions and lets other parties add keys beside ours, so
a ``*Meta`` wrapper keeps unknown keys; inside ``threadline`` no key goes unlisted
(``extra="forbid"``), so a key the engine sends and the protocol lacks fails the
conformance checks instead of drifting silently.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from .base import WireModel


class ThreadlineBlock(BaseModel):
    """Base of the blocks under ``_meta.threadline``: camelCase, closed."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        defer_build=True,
        serialize_by_alias=True,
    )


class TurnInfo(ThreadlineBlock):
    """On message chunks: the turn the message belongs to (``u3``, ``a3``)."""

    turn_id: str
    compacted: bool | None = None
    """Replay only: a compaction has since taken this message out of the prompt."""
    truncated: bool | None = None
    """Replay only: the answer was cut off (an interrupt, a failure, a crash)."""
    summary: bool | None = None
    """Live and replay: this agent message is a compaction's summary of the earlier
    conversation (sent so to clients that do not show ``compaction_update``)."""


class ToolCallInfo(ThreadlineBlock):
    turn_id: str
    exit_signal: bool | None = None
    """A call of an exit tool: a recorded signal, never run."""


class ToolCallUpdateInfo(ThreadlineBlock):
    cancelled: bool | None = None
    """ACP has no ``cancelled`` status: the call is ``failed`` and this is set."""


class SessionInfoUpdateInfo(ThreadlineBlock):
    status: str | None = None
    """A provider's passing status (retrying, loading the model…)."""
    watching: bool | None = None
    """``true``: this client now watches a turn that runs in another process (after
    ``session/load``), its updates follow; ``false``: that turn has ended."""


class ToolOffer(ThreadlineBlock):
    """The tools one model call of a turn was offered."""

    offered: list[str]
    left_out: int


class PromptResultInfo(ThreadlineBlock):
    turn_id: str | None = None
    message_id: str | None = None
    user_message_id: str | None = None
    """The prompt's stored message: a client can fork at it at once."""
    tool_offers: list[ToolOffer] | None = None
    """One entry per model call, in order: why a tool was (not) called."""
    command: str | None = None
    """Set when the prompt was a slash command (``compact``, ``fork``)."""


class CompactResultInfo(ThreadlineBlock):
    compacted: bool
    reason: str | None = None


class McpInfo(ThreadlineBlock):
    """On the results that set a session up (new, load, resume, a model change)."""

    mcp_failures: dict[str, str] | None = None
    """MCP servers that did not start, with the reason."""


class ChunkMeta(WireModel):
    threadline: TurnInfo | None = None


class ToolCallMeta(WireModel):
    threadline: ToolCallInfo | None = None


class ToolCallUpdateMeta(WireModel):
    threadline: ToolCallUpdateInfo | None = None


class SessionInfoUpdateMeta(WireModel):
    threadline: SessionInfoUpdateInfo | None = None


class PromptResultMeta(WireModel):
    threadline: PromptResultInfo | None = None


class CompactResultMeta(WireModel):
    threadline: CompactResultInfo | None = None


class McpMeta(WireModel):
    threadline: McpInfo | None = None
