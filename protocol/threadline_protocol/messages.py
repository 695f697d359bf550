"""Transcript messages as ``session/history`` returns them."""

from __future__ import annotations

from typing import Literal

from .base import WireModel
from .content import TranscriptBlock

Role = Literal["user", "assistant", "tool"]

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


class Usage(WireModel):
    """Token counts of one model call (or a turn's sum)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_read_tokens: int = 0
    cached_write_tokens: int = 0
    thought_tokens: int | None = None
    total_tokens: int = 0


class Message(WireModel):
    message_id: str
    turn_id: str
    role: Role
    content: list[TranscriptBlock]
    created_at: str
    model: str | None = None
    usage: Usage | None = None
    stop_reason: StopReason | None = None
    truncated: bool = False
    compacted: bool = False
    error: str | None = None
