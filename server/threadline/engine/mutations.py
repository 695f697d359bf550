"""Typed transcript mutations: the only way a transcript ever changes.

Each mutation is stored as one event (``kind`` + JSON payload) *before* it is applied
to the in-memory transcript and announced to clients, so the event log is the
transcript. Messages inside payloads are already in their wire shape
(``session/history``), so reading history never re-validates stored data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..store.base import NewEvent

Msg = dict[str, Any]


@dataclass(frozen=True, slots=True)
class MessageMutation:
    """Base of the mutations that append exactly one message."""

    message: Msg
    kind: ClassVar[str] = ""

    def to_event(self) -> NewEvent:
        return NewEvent(self.kind, {"message": self.message}, (self.message["messageId"],))


@dataclass(frozen=True, slots=True)
class UserMessage(MessageMutation):
    kind: ClassVar[str] = "user_message"


@dataclass(frozen=True, slots=True)
class AssistantMessage(MessageMutation):
    kind: ClassVar[str] = "assistant_message"


@dataclass(frozen=True, slots=True)
class ToolResult(MessageMutation):
    kind: ClassVar[str] = "tool_result"


@dataclass(frozen=True, slots=True)
class AssistantTruncated(MessageMutation):
    """A partial answer cut off by an interrupt, a failure or a crash."""

    kind: ClassVar[str] = "assistant_truncated"


@dataclass(frozen=True, slots=True)
class ToolCancelled(MessageMutation):
    """The result of a tool call that never finished, so every call has one result."""

    kind: ClassVar[str] = "tool_cancelled"


@dataclass(frozen=True, slots=True)
class ContextSummary:
    """A compaction checkpoint: ``message`` replaces everything up to ``upToMessageId``
    in the prompt, except the messages listed in ``keepMessageIds``."""

    message: Msg
    up_to_message_id: str
    keep_message_ids: tuple[str, ...] = ()
    remember: tuple[str, ...] = ()
    kind: ClassVar[str] = "context_summary"

    def to_event(self) -> NewEvent:
        return NewEvent(
            self.kind,
            {
                "message": self.message,
                "upToMessageId": self.up_to_message_id,
                "keepMessageIds": list(self.keep_message_ids),
                "remember": list(self.remember),
            },
            (self.message["messageId"],),
        )


@dataclass(frozen=True, slots=True)
class ExperienceRemember:
    experience_id: str
    text: str
    kind: ClassVar[str] = "experience_remember"

    def to_event(self) -> NewEvent:
        return NewEvent(self.kind, {"experienceId": self.experience_id, "text": self.text})


@dataclass(frozen=True, slots=True)
class ExperienceForget:
    experience_id: str
    kind: ClassVar[str] = "experience_forget"

    def to_event(self) -> NewEvent:
        return NewEvent(self.kind, {"experienceId": self.experience_id})


@dataclass(frozen=True, slots=True)
class ContextReplace:
    """Hard reset of the working transcript (history keeps the old messages)."""

    messages: tuple[Msg, ...] = field(default_factory=tuple)
    kind: ClassVar[str] = "context_replace"

    def to_event(self) -> NewEvent:
        return NewEvent(
            self.kind,
            {"messages": list(self.messages)},
            tuple(m["messageId"] for m in self.messages),
        )


@dataclass(frozen=True, slots=True)
class Mark:
    """A workspace checkpoint as the transcript keeps it: where in the transcript it
    was taken (messages before it), the tree of each workspace root, and the host
    whose files they are (checkpoints live in that machine's data folder)."""

    position: int
    trees: tuple[tuple[str, str], ...]
    host: str
    moment: str
    """``before`` (a turn's first change), ``after`` (a change), ``restore`` (files
    brought back), ``forced`` (the workspace as found, before a forced restore)."""

    def wire(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "trees": dict(self.trees),
            "host": self.host,
            "moment": self.moment,
        }

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> Mark:
        return cls(raw["position"], tuple(raw["trees"].items()), raw["host"], raw["moment"])


@dataclass(frozen=True, slots=True)
class WorkspaceCheckpoint:
    """The workspace's state at this point of the session (`Mark`, placed by the fold
    at the transcript's length when applied). Creates no message."""

    trees: tuple[tuple[str, str], ...]
    host: str
    moment: str
    kind: ClassVar[str] = "workspace_checkpoint"

    def to_event(self) -> NewEvent:
        return NewEvent(
            self.kind, {"trees": dict(self.trees), "host": self.host, "moment": self.moment}
        )


@dataclass(frozen=True, slots=True)
class TranscriptReset:
    """A rewind (or its undoing): the transcript keeps its first ``keep`` messages,
    then ``messages`` (an unrewind's cut turns, again), and the state listed here. The
    log is never edited: what was cut stays in it (and in ``rewind_id``'s fork)."""

    keep: int
    messages: tuple[Msg, ...]
    experiences: dict[str, str]
    working_start: int
    compaction: tuple[int, int, tuple[str, ...]] | None
    """The compaction checkpoint then: summary index, up-to index, kept message ids."""
    marks: tuple[Mark, ...]
    rewind_id: str | None
    """Set by a rewind: the fork that holds what was cut, which ``session/unrewind``
    brings back until the next message."""
    kind: ClassVar[str] = "transcript_reset"

    def to_event(self) -> NewEvent:
        return NewEvent(
            self.kind,
            {
                "keep": self.keep,
                "messages": list(self.messages),
                "experiences": self.experiences,
                "workingStart": self.working_start,
                "compaction": None if self.compaction is None else list(self.compaction),
                "marks": [m.wire() for m in self.marks],
                "rewindId": self.rewind_id,
            },
            message_count=self.keep + len(self.messages),
        )

    @classmethod
    def from_payload(cls, p: dict[str, Any]) -> TranscriptReset:
        cp = p.get("compaction")
        return cls(
            p["keep"],
            tuple(p.get("messages", ())),
            dict(p.get("experiences", {})),
            p.get("workingStart", 0),
            None if cp is None else (cp[0], cp[1], tuple(cp[2])),
            tuple(Mark.from_wire(m) for m in p.get("marks", ())),
            p.get("rewindId"),
        )


Mutation = (
    UserMessage
    | AssistantMessage
    | ToolResult
    | AssistantTruncated
    | ToolCancelled
    | ContextSummary
    | ExperienceRemember
    | ExperienceForget
    | ContextReplace
    | WorkspaceCheckpoint
    | TranscriptReset
)

MESSAGE_KINDS: dict[str, type[MessageMutation]] = {
    c.kind: c
    for c in (UserMessage, AssistantMessage, ToolResult, AssistantTruncated, ToolCancelled)
}


def from_event(kind: str, payload: dict[str, Any]) -> Mutation:
    """Rebuild a typed mutation from a stored event."""
    if kind in MESSAGE_KINDS:
        return MESSAGE_KINDS[kind](payload["message"])  # type: ignore[return-value]
    if kind == ContextSummary.kind:
        return ContextSummary(
            payload["message"],
            payload["upToMessageId"],
            tuple(payload.get("keepMessageIds", ())),
            tuple(payload.get("remember", ())),
        )
    if kind == ExperienceRemember.kind:
        return ExperienceRemember(payload["experienceId"], payload["text"])
    if kind == ExperienceForget.kind:
        return ExperienceForget(payload["experienceId"])
    if kind == ContextReplace.kind:
        return ContextReplace(tuple(payload["messages"]))
    if kind == WorkspaceCheckpoint.kind:
        return WorkspaceCheckpoint(
            tuple(payload["trees"].items()), payload["host"], payload["moment"]
        )
    if kind == TranscriptReset.kind:
        return TranscriptReset.from_payload(payload)
    raise ValueError(f"unknown mutation kind {kind!r}")
