"""Compaction: the session's own model writes a handoff summary of older history.

The last ``keep_turns`` turns and the original task message stay verbatim; older
tool results are shown to the summariser through their ``compactSummary`` when a tool
gave one. A session over its limit is always brought back under it: fewer turns are
kept if the ones asked for do not leave room, and a task message too large to keep is
summarised with the rest. The result is one ``ContextSummary`` mutation, so a compaction that fails
changes nothing, and ``session/history`` still shows every message (the replaced
ones marked ``compacted``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..providers.base import (
    ChatMessage,
    ChatRequest,
    ProviderError,
    TextDelta,
)
from . import updates
from .compiler import render_block, result_chars, to_chat_messages
from .errors import ProviderFailed
from .ids import new_id, now_iso
from .mutations import ContextSummary, Msg

if TYPE_CHECKING:
    from .session import Session

log = logging.getLogger(__name__)

SUMMARY_MAX_TOKENS = 600
TOOL_RESULT_CHARS = 800
TRANSCRIPT_CHARS = 24_000
TASK_SHARE = 0.25
"""The original task message stays verbatim only while it takes at most this share of
the context window; a larger one would keep every compacted prompt too large."""

SUMMARY_PROMPT = """You are handing this conversation over to another assistant who \
will continue it without seeing the messages below. Write a concise handoff summary \
with these headings:
Goal:
Constraints and decisions:
Progress:
Files and facts touched:
Open questions:
Next step:
Keep exact names, paths, numbers and identifiers. Write only the summary."""


class CompactionFailed(ProviderFailed):
    """The summary could not be written; the transcript is unchanged."""


@dataclass(frozen=True, slots=True)
class Plan:
    """Which working messages are summarised and which stay verbatim."""

    summarize: list[Msg]
    keep_ids: tuple[str, ...]
    up_to_message_id: str
    kept: list[Msg]
    """What the prompt still carries verbatim after the summary: the kept task message
    and the recent turns."""


def _plan_at(working: list[Msg], keep_turns: int, task_id: str | None) -> Plan | None:
    starts = [i for i, m in enumerate(working) if m["role"] == "user"]
    if keep_turns > 0:
        if len(starts) <= keep_turns:
            return None
        cut = starts[-keep_turns]
    else:
        cut = len(working)
    older = working[:cut]
    keep = tuple(m["messageId"] for m in older if m["messageId"] == task_id)
    summarize = [m for m in older if m["messageId"] not in keep]
    if not summarize:
        return None
    kept = [m for m in older if m["messageId"] in keep] + working[cut:]
    return Plan(summarize, keep, older[-1]["messageId"], kept)


def plan(
    working: list[Msg],
    keep_turns: int,
    task_id: str | None,
    fits: Callable[[list[Msg]], bool] | None = None,
) -> Plan | None:
    """Cut at a turn start so a tool call is never separated from its result.

    ``fits``, given when the session is over its limit, says whether what would stay
    verbatim leaves room: if not, fewer turns are kept, down to none, and then the
    task message is summarised too. So a session made of one huge turn (or one huge
    message) can always be brought back under the limit."""
    if fits is None:
        return _plan_at(working, keep_turns, task_id)
    users = sum(1 for m in working if m["role"] == "user")
    for keep in range(min(keep_turns, users), -1, -1):
        candidate = _plan_at(working, keep, task_id)
        if fits(working if candidate is None else candidate.kept):
            return candidate  # None: nothing older to summarise, and it all fits
    return _plan_at(working, 0, None)


def render_for_summary(messages: list[Msg]) -> str:
    lines: list[str] = []
    for m in messages:
        role = m["role"]
        for b in m["content"]:
            t = b.get("type")
            if t == "tool_use":
                lines.append(f"[assistant called {b['name']} with {b.get('input')}]")
            elif t == "tool_result":
                body = b.get("compactSummary") or "\n".join(
                    render_block(c) for c in b.get("content", [])
                )
                if len(body) > TOOL_RESULT_CHARS:
                    body = body[:TOOL_RESULT_CHARS] + " …[cut]"
                lines.append(f"[result of {b.get('toolName') or 'tool'}]: {body}")
            elif t == "summary":
                lines.append(f"[earlier summary]: {b.get('text', '')}")
            elif t in ("text", "resource", "resource_link"):
                text = render_block(b)
                if text:
                    lines.append(f"{role}: {text}")
    text = "\n".join(lines)
    if len(text) > TRANSCRIPT_CHARS:
        # keep the start (the task) and the most recent part
        half = TRANSCRIPT_CHARS // 2
        text = text[:half] + "\n…[middle cut]…\n" + text[-half:]
    return text


def summary_request(rendered: str, instructions: str | None, max_tokens: int) -> ChatRequest:
    ask = SUMMARY_PROMPT
    if instructions:
        ask += f"\nAlso follow these instructions: {instructions}"
    return ChatRequest(
        messages=[
            ChatMessage("system", ask),
            ChatMessage("user", f"Conversation to summarise:\n\n{rendered}\n\nWrite the summary."),
        ],
        max_tokens=max_tokens,
        tool_choice="none",
        purpose="compaction",
    )


async def compact(
    session: Session, *, instructions: str | None, keep_turns: int, turn_id: str
) -> dict[str, Any]:
    """Summarise and commit one checkpoint; progress goes out as ``compaction_update``."""
    transcript = session.transcript
    provider = await session.provider()
    compaction_id = new_id("cmp")
    window = provider.context_window

    def tokens(working: list[Msg] | None = None) -> int:
        return provider.count_tokens(
            session.compile_request(
                budget=session.config.tool_budget, context_window=window, working=working
            )
        )

    tokens_before = tokens()
    messages_before = len(transcript.working())
    task = next((m for m in transcript.messages if m["role"] == "user"), None)
    task_id = None
    if task is not None and provider.count_tokens(ChatRequest(to_chat_messages([task]))) <= int(
        window * TASK_SHARE
    ):
        task_id = task["messageId"]  # an over-large task is summarised like the rest
    # A session over its limit must come back inside the context, whatever
    # keep_turns asks (verbatim turns and the task message are summarised if need be).
    budget = max(128, min(SUMMARY_MAX_TOKENS, session.config.max_tokens or SUMMARY_MAX_TOKENS))
    over = tokens_before > (session.compaction_limit(provider) or window)
    cut = plan(
        transcript.working(),
        keep_turns,
        task_id,
        (lambda kept: tokens(kept) + budget <= window) if over else None,
    )

    def noop(reason: str) -> dict[str, Any]:
        return {
            "summary": "",
            "tokensBefore": tokens_before,
            "tokensAfter": tokens_before,
            "messagesBefore": messages_before,
            "messagesAfter": messages_before,
            "_meta": {"threadline": {"compacted": False, "reason": reason}},
        }

    if cut is None:
        return noop("nothing old enough to summarise")
    shown = updates.shows_compaction(session.link.client_capabilities())

    def progress(update: updates.Update) -> None:
        if shown:
            session.announce(update)

    progress(updates.compaction(compaction_id, "in_progress"))
    try:
        # A session that caps answers short gets a short summary too (never tiny).
        request = summary_request(render_for_summary(cut.summarize), instructions, budget)
        parts: list[str] = []
        async with aclosing(provider.stream(request)) as events:  # type: ignore[type-var]
            async for event in events:
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                elif isinstance(event, ProviderError):
                    raise CompactionFailed(
                        f"compaction failed: {event.message}",
                        {"reason": event.reason, "retryable": event.retryable},
                    )
        text = "".join(parts).strip()
        if not text:
            raise CompactionFailed("compaction failed: the model wrote an empty summary")
    except BaseException as exc:
        status = "failed" if isinstance(exc, Exception) else "cancelled"
        progress(updates.compaction(compaction_id, status, error=str(exc) or None))
        raise
    message: Msg = {
        "messageId": new_id("msg"),
        "turnId": turn_id,
        "role": "assistant",
        "content": [updates.summary_block(text, compaction_id)],
        "createdAt": now_iso(),
        "model": session.config.model,
    }
    replaced = provider.count_tokens(
        ChatRequest(to_chat_messages(cut.summarize, result_limit=result_chars(window)))
    )
    if provider.count_tokens(ChatRequest(to_chat_messages([message]))) >= replaced:
        # A summary longer than what it replaces would only grow the prompt.
        progress(
            updates.compaction(
                compaction_id,
                "failed",
                error="the summary is not shorter than the history it would replace",
            )
        )
        return noop("the summary is not shorter than the history it would replace")
    session.commit([ContextSummary(message, cut.up_to_message_id, cut.keep_ids)])
    tokens_after = tokens()
    session.announce(
        updates.compacted(message["messageId"], turn_id, message["content"][0], shown=shown)
    )
    return {
        "summary": text,
        "tokensBefore": tokens_before,
        "tokensAfter": tokens_after,
        "messagesBefore": messages_before,
        "messagesAfter": len(transcript.working()),
        "_meta": {"threadline": {"compacted": True}},
    }
