"""What the engine tells a session's clients, as typed events.

The engine announces these (``Session.announce`` → ``ClientLink.announce``); how a
client is shown them is the connection's business: `rpc/projection.py` makes ACP
``session/update`` payloads of them. Events that come from stored content carry the
stored block itself, so the live update and the one ``session/load`` replays from
history are made by the same function of the same block.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from threadline_protocol.sessions import SessionConfigOption

from ..tools.base import CommandShown
from .blocks import Block
from .mutations import Msg


@dataclass(frozen=True, slots=True)
class MessageChunk:
    """Text of the answer being streamed (a coalesced burst), or a command's reply."""

    message_id: str
    turn_id: str
    text: str
    thought: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A call as its answer stored it: a ``tool_use`` block (pending), or an
    ``exit_signal`` block (a signal is recorded, never run)."""

    block: Block
    turn_id: str


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A call started running, or shows its content so far (a command's output, the
    terminal it runs in): live only, not history."""

    tool_call_id: str
    content: tuple[dict[str, Any], ...] | None = None
    child_session_id: str | None = None
    """The child session a ``delegate`` call runs, for clients to open."""
    command: CommandShown | None = None
    """Set when the content is the output of a command the sidecar runs itself."""


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A call's stored ``tool_result`` block (completed, failed or cancelled)."""

    block: Block


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens the last model call used, and the context window's size."""

    used: int
    size: int
    cost: float | None = None
    """The session's cost so far in US dollars (`cost.session_cost`); None when none of
    its calls was made by a model with a price."""


@dataclass(frozen=True, slots=True)
class Owner:
    """The editor process (sidecar) that runs a session's work."""

    pid: int
    host: str
    since: str
    here: bool


@dataclass(frozen=True, slots=True)
class Queued:
    """A prompt sent while the session worked that has not finished."""

    id: str
    mode: str
    state: str
    """``queued``, ``held`` or ``taken``."""
    prompt: list[Block]
    created_at: str


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A change to the session as a whole, in any window: a new title, a provider's
    status notice (a retry…), that this client now follows a turn running in another
    process (``watching``) or no longer does, what it is doing and where, its queue,
    its model, a new fork, its deletion. Only what changed is set."""

    updated_at: str
    title: str | None = None
    status: str | None = None
    state: str | None = None
    owner: Owner | None = None
    queue: tuple[Queued, ...] | None = None
    model: str | None = None
    forked: tuple[str, str | None] | None = None
    """``(fork id, forked-at message id)``."""
    deleted: bool = False
    rewound: int | None = None
    """The transcript was rewound elsewhere: the messages it holds now."""
    watching: bool | None = None
    warning: str | None = None
    """Said once: the session's model cannot see the images it holds."""


@dataclass(frozen=True, slots=True)
class CompactionProgress:
    """A compaction started, failed or was cancelled: live only."""

    compaction_id: str
    status: Literal["in_progress", "failed", "cancelled"]
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Compacted:
    """A compaction committed its stored ``summary`` block."""

    message_id: str
    turn_id: str
    block: Block


@dataclass(frozen=True, slots=True)
class AvailableCommands:
    """The slash commands a prompt may be: ``(name, description, input hint)``."""

    commands: tuple[tuple[str, str, str | None], ...]


@dataclass(frozen=True, slots=True)
class ModeChanged:
    """The session's mode changed (``session/set_mode`` or its config option)."""

    mode_id: str


@dataclass(frozen=True, slots=True)
class ConfigOptions:
    """One of the session's config options changed (here or in another window): all
    of them as they are now."""

    options: tuple[SessionConfigOption, ...]


@dataclass(frozen=True, slots=True)
class Replayed:
    """A committed message shown as ``session/load`` shows it (the messages of a turn
    another process runs, as they land)."""

    message: Msg


@dataclass(frozen=True, slots=True)
class PromptStored:
    """A turn stored its prompt (the user message, under its id): the prompt is in the
    session's history from here on. Clients that learn of their own prompt only from
    the agent are shown it; others already have it."""

    message: Msg


@dataclass(frozen=True, slots=True)
class WorkEnded:
    """The session's foreground work (a turn, a compaction, a command) ended, before
    the session is shown idle: ``stop_reason`` as a turn reports it (``end_turn`` for
    work that is not a turn), or None when it failed (``error``: code and message)."""

    stop_reason: str | None
    error: tuple[int, str] | None = None


Event = (
    MessageChunk
    | ToolCallStarted
    | ToolProgress
    | ToolFinished
    | Usage
    | SessionInfo
    | CompactionProgress
    | Compacted
    | AvailableCommands
    | ModeChanged
    | ConfigOptions
    | Replayed
    | PromptStored
    | WorkEnded
)


class ReplayProjection(Protocol):
    """How a client is shown stored history again (``session/load``), given by its
    link: the transcript keeps what ``replay`` made of each message, as JSON, for as
    long as ``variant`` (what the client shows differently) stays the same."""

    @property
    def variant(self) -> Hashable: ...

    def replay(self, message: Msg) -> list[dict[str, Any]]: ...
