"""Typed transcript mutations: the only way a transcript ever changes.

Each mutation is stored as one event (``kind`` + JSON payload) *before* it is applied
to the in-memory transcript and announced to clients, so the event log is the
transcript. Messages inside payloads are already in their wire shape
(``session/history``), so reading history never re-validates stored data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from ..store.base import Blob, NewEvent
from .images import externalize, has_images

Msg = dict[str, Any]


@dataclass(frozen=True, slots=True)
class MessageMutation:
    """Base of the mutations that append exactly one message. ``blobs``: the images
    the message references by hash, stored with its event (`store.blobs`); empty when
    rebuilt from the log, where they are stored already."""

    message: Msg
    blobs: tuple[Blob, ...] = ()
    kind: ClassVar[str] = ""

    @classmethod
    def holding(cls, message: Msg) -> Self:
        """The mutation of a new message whose image blocks may carry their bytes: the
        bytes become blobs, the message keeps their hashes (`images.externalize`)."""
        content, blobs = externalize(message["content"])
        if not blobs:
            return cls(message)
        return cls({**message, "content": content}, tuple(blobs))

    def to_event(self) -> NewEvent:
        return NewEvent(
            self.kind, {"message": self.message}, (self.message["messageId"],), self.blobs
        )


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
class MultimodalToolResult(ToolResult):
    """A tool result that holds images (an MCP screenshot, a client tool's plot).

    Stored as the tool message it is (same event kind: clients show the images in the
    call's result, history and search read it as any result). A model that takes
    images in tool results (Anthropic) is sent it as it is; one that takes them only in
    user messages (OpenAI-compatible chat) is sent it `restructured`: the result says
    the images follow, and a user message after the batch's results carries them."""

    def restructured(self) -> tuple[Msg, Msg]:
        return split_images(self.message)


def split_images(message: Msg) -> tuple[Msg, Msg]:
    """A tool message with images as (the tool message with each image replaced by a
    note that it follows, a user message holding the images)."""
    images: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for block in message["content"]:
        if block.get("type") != "tool_result" or not has_images(block.get("content", [])):
            results.append(block)
            continue
        content: list[dict[str, Any]] = []
        for c in block.get("content", []):
            if c.get("type") == "image":
                images.append(c)
                content.append({"type": "text", "text": IMAGE_FOLLOWS})
            else:
                content.append(c)
        results.append({**block, "content": content})
    call = next(
        (
            b.get("toolName") or "the tool"
            for b in message["content"]
            if b.get("type") == "tool_result"
        ),
        "the tool",
    )
    intro = {"type": "text", "text": f"The image{'s' if len(images) > 1 else ''} {call} returned:"}
    user: Msg = {
        "messageId": f"{message['messageId']}-images",
        "turnId": message["turnId"],
        "role": "user",
        "content": [intro, *images],
        "createdAt": message["createdAt"],
    }
    return {**message, "content": results}, user


IMAGE_FOLLOWS = "[image: sent in the next user message]"


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
    | MultimodalToolResult
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
    if kind == ToolResult.kind:
        message = payload["message"]
        if has_images(message["content"]):
            return MultimodalToolResult(message)
        return ToolResult(message)
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
