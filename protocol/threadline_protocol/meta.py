"""The ``_meta`` blocks Threadline adds to ACP's messages, typed so the schema says
exactly which keys each one carries.

ACP reserves ``_meta`` for extensions and lets other parties add keys beside ours, so
a ``*Meta`` wrapper keeps unknown keys; inside ``threadline`` no key goes unlisted
(``extra="forbid"``), so a key the engine sends and the protocol lacks fails the
conformance checks instead of drifting silently.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from .base import WireModel
from .content import ContentBlock


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
    child_session_id: str | None = None
    """A ``delegate`` call: the child session it runs (open it to follow the child)."""


class OwnerInfo(ThreadlineBlock):
    """The editor process (sidecar) that runs a session's work."""

    pid: int
    host: str
    since: str
    here: bool
    """The process this client talks to."""


class QueuedPrompt(ThreadlineBlock):
    """A prompt sent while the session worked, not yet part of the transcript (or
    joining the running turn)."""

    id: str
    """The message id it is stored under once it runs."""
    mode: Literal["steer", "queue"]
    state: Literal["queued", "held", "taken"]
    """``queued``: runs when its turn comes (a steer: at the running turn's next model
    call); ``held``: kept, runs only on ``session/queue/resume`` (after a crash, an
    interrupt or a failure); ``taken``: joined or started the running turn."""
    prompt: list[ContentBlock]
    created_at: str


class ForkInfo(ThreadlineBlock):
    session_id: str
    forked_at_message_id: str | None


class SessionInfoUpdateInfo(ThreadlineBlock):
    status: str | None = None
    """A provider's passing status (retrying, loading the model…)."""
    watching: bool | None = None
    """``true``: this client now watches a turn that runs in another process (after
    ``session/load``), its updates follow; ``false``: that turn has ended."""
    state: (
        Literal["idle", "running", "requires_action", "compacting", "repairing", "rewinding"] | None
    ) = None
    """What the session is doing now, in whichever window runs it (``rewinding``: a
    rewind, an unrewind or a restore of files)."""
    owner: OwnerInfo | None = None
    """Which editor process runs it (with ``state`` other than ``idle``)."""
    queue: list[QueuedPrompt] | None = None
    """The prompts waiting (the whole list, in order), when it changed."""
    model: str | None = None
    """The session's model, when another window changed it."""
    forked: ForkInfo | None = None
    """A new fork of this session (made in any window)."""
    deleted: bool | None = None
    """The session was deleted (in any window): later requests answer -32002."""
    rewound: int | None = None
    """The session was rewound in another window: the messages it holds now (reload
    them with ``session/load`` or ``session/history``)."""
    warning: str | None = None
    """Said once per session: its model cannot see images, and reads a placeholder
    (``[image: 1280×720 PNG, 84 KB — this model cannot see images]``) for each."""


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
    queue: Literal["removed", "held"] | None = None
    """A queued or steering prompt that did not run: removed from the queue, or held
    (kept, runs on ``session/queue/resume``); ``stopReason`` is ``cancelled``."""


class CompactResultInfo(ThreadlineBlock):
    compacted: bool
    reason: str | None = None


class McpInfo(ThreadlineBlock):
    """On the results that set a session up (new, load, resume, a model change)."""

    mcp_failures: dict[str, str] | None = None
    """MCP servers that did not start, with the reason."""
    checkpoints: Literal["off"] | None = None
    """``off`` when this sidecar keeps no checkpoints of files (no ``git`` on its
    ``PATH``): ``session/diff`` lists nothing, a rewind or fork cannot bring files
    back. Absent when they are on."""
    checkpoints_reason: str | None = None
    """Why checkpoints are off, for the user."""


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
