"""What a turn that did not finish leaves in the transcript, made in one place.

A turn can stop anywhere: interrupted or failed here (`Turn` records it as it
unwinds), forked while it runs (the child gets a copy of what it would leave), or
its process died (the next process to hold the session records it, from the stream
journal). Each time the transcript must stay whole: the answer that was streaming
becomes a truncated message, and every call still open gets a cancelled result, so
each ``tool_use`` has exactly one. `unfinished` makes those mutations; only the
answer (from the live stream or from the journal) and the reason differ.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..store.base import InflightStream
from . import blocks
from .blocks import Block
from .ids import new_id
from .mutations import AssistantTruncated, Mutation
from .transcript import Transcript, cancelled_results


@dataclass(frozen=True, slots=True)
class Why:
    """Why a turn stopped: the truncated answer's ``error`` and the reason each
    cancelled result gives."""

    answer: str
    calls: str


FORKED = Why("forked while the answer was streaming", "not finished when forked")
CRASHED = Why("the sidecar stopped before the answer finished", "the sidecar stopped")


def stopped(reason: str) -> Why:
    """A turn interrupted or failed here: one reason for both."""
    return Why(reason, reason)


@dataclass(frozen=True, slots=True)
class PartialAnswer:
    """The answer that was streaming when the turn stopped."""

    message_id: str
    turn_id: str
    content: list[Block]
    model: str | None

    @classmethod
    def journaled(cls, inflight: InflightStream, transcript: Transcript) -> PartialAnswer | None:
        """The answer a journal holds, unless it was stored after all."""
        if inflight.message_id in transcript.index:
            return None
        content: list[Block] = []
        if inflight.thought:
            content.append(blocks.thought(inflight.thought))
        if inflight.text:
            content.append(blocks.text(inflight.text))
        model = inflight.meta.get("model")
        return cls(inflight.message_id, journaled_turn(inflight, transcript), content, model)


def journaled_turn(inflight: InflightStream, transcript: Transcript) -> str:
    """The turn a journaled answer belongs to."""
    return str(inflight.meta.get("turnId") or f"a{transcript.turn_number}")


def unfinished(
    transcript: Transcript,
    why: Why,
    *,
    answer: PartialAnswer | None = None,
    turn_id: str | None = None,
    copy: bool = False,
) -> list[Mutation]:
    """The truncated answer (if one was streaming) and a cancelled result for every
    open call (of turn ``turn_id``, by default the transcript's latest). ``copy``
    gives the answer a new id: a fork's copy, while the parent may still store it."""
    out: list[Mutation] = []
    if answer is not None:
        message_id = new_id("msg") if copy else answer.message_id
        out.append(
            AssistantTruncated(
                blocks.truncated_answer(
                    message_id, answer.turn_id, answer.content, answer.model, why.answer
                )
            )
        )
    out.extend(cancelled_results(transcript, why.calls, turn_id))
    return out
