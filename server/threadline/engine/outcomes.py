"""What the engine's work comes to, as typed values; the wire shapes are made of them
only at the engine's public edge (`engine.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..providers.base import Usage


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How a turn ended and what it stored."""

    stop_reason: str
    usage: Usage
    turn_id: str
    message_id: str | None
    """The turn's last answer (none when it stopped before one was stored)."""
    user_message_id: str | None
    tool_offers: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """One entry per model call, in order: which tools it was offered, and why."""


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """A prompt that was a slash command (``compact``, ``fork``)."""

    command: str


PromptOutcome = TurnOutcome | CommandOutcome


@dataclass(frozen=True, slots=True)
class NotRun:
    """A steering or queued prompt that did not run: ``removed`` from the queue, or
    ``held`` (it runs on ``session/queue/resume``)."""

    why: str


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    """A compaction's figures; ``compacted`` False (with why) when nothing changed."""

    summary: str
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    compacted: bool
    reason: str | None = None

    @classmethod
    def unchanged(cls, tokens: int, messages: int, reason: str) -> CompactionOutcome:
        return cls("", tokens, tokens, messages, messages, compacted=False, reason=reason)


@dataclass(frozen=True, slots=True)
class Forked:
    session_id: str
    parent_session_id: str
    forked_at_message_id: str | None


@dataclass(frozen=True, slots=True)
class Interrupted:
    """Whether a turn was stopped, and which."""

    interrupted: bool
    turn_id: str | None = None


@dataclass(frozen=True, slots=True)
class ContextUse:
    """Tokens the next request takes, of the context window's ``size``, by part."""

    used: int
    size: int
    system: int
    tools: int
    history: int
    summary: int


@dataclass(frozen=True, slots=True)
class ChangedFile:
    """One file of a session's diff (``checkpoints.FileChange``, with its root)."""

    root: str
    path: str
    status: str
    old_path: str | None
    binary: bool
    additions: int
    deletions: int
    diff: str | None
    truncated: bool


@dataclass(frozen=True, slots=True)
class DiffOutcome:
    files: list[ChangedFile]
    from_message_id: str | None
    to_message_id: str | None
    notice: str | None = None
    """Why the diff may be incomplete or empty (checkpoints off, a workspace too big)."""


@dataclass(frozen=True, slots=True)
class RestoredFiles:
    """What a restore wrote and deleted, as paths relative to their root."""

    written: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rewound:
    rewind_id: str | None
    """The fork that holds what was cut (``session/unrewind`` takes it); None for an unrewind."""
    message_count: int
    files: RestoredFiles | None
