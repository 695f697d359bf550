"""Compaction, the pure part: what to summarise, how the model is shown it, what it
is asked. `compactor.py` runs it (the
model call, the commit); nothing here touches a session, so it is tested on its own.

The session's own model writes a handoff summary of older history.

The last ``keep_turns`` turns and the original task message stay verbatim; older
tool results are shown to the summariser through their ``compactSummary`` when a tool
gave one. A session over its limit is always brought back under it: fewer turns are
kept if the ones asked for do not leave room, and a task message too large to keep is
summarised with the rest. The result is one ``ContextSummary`` mutation (its message
made by `blocks.summary_message`), so a compaction that fails changes nothing, and
``session/history`` still shows every message (the replaced ones marked ``compacted``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..providers.base import ChatMessage, ChatRequest
from .compiler import render_block
from .images import placeholder
from .mutations import Msg

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
            elif t == "image":  # the summary keeps what it was, never the bytes
                lines.append(f"{role}: {placeholder(b, 'compacted')}")
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


def summary_budget(max_tokens: int | None) -> int:
    """Tokens the summary may take: a session that caps answers short gets a short
    summary too (never tiny)."""
    return max(128, min(SUMMARY_MAX_TOKENS, max_tokens or SUMMARY_MAX_TOKENS))
