"""What must hold of a stored session, and of a session against what a client saw.

``structural_problems`` checks a ``session/history`` on its own (docs/protocol.md): unique
message ids, user turns counting up, every ``tool_use`` answered by exactly one later
``tool_result``, every assistant answer either finished or marked truncated.

:class:`Ledger` files what a client was told (streamed text per message, tool calls,
compaction summaries, titles, turns, acknowledged results) and
``ledger_problems`` checks a history against it: every announced mutation is stored.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]


def text_of(message: Message) -> str:
    return "".join(
        b.get("text", "") for b in message["content"] if b.get("type") in ("text", "summary")
    )


def _is_summary(message: Message) -> bool:
    content = message["content"]
    return bool(content) and content[0].get("type") == "summary"


def structural_problems(messages: list[Message]) -> list[str]:
    problems: list[str] = []
    ids = [m["messageId"] for m in messages]
    if len(set(ids)) != len(ids):
        problems.append("duplicate message ids")
    user_turns = [
        int(m["turnId"][1:])
        for m in messages
        if m["role"] == "user" and str(m.get("turnId", "")).startswith("u")
    ]
    if user_turns != sorted(set(user_turns)):
        problems.append(f"user turns do not count up: {user_turns}")
    open_calls: set[str] = set()
    answered: collections.Counter[str] = collections.Counter()
    for m in messages:
        for b in m["content"]:
            if b.get("type") == "tool_use":
                if b["id"] in open_calls or answered[b["id"]]:
                    problems.append(f"tool_use {b['id']} appears twice")
                open_calls.add(b["id"])
            elif b.get("type") == "tool_result":
                use = b["toolUseId"]
                if use not in open_calls:
                    problems.append(f"tool_result for {use} without an earlier open tool_use")
                open_calls.discard(use)
                answered[use] += 1
        finished = bool(m.get("stopReason")) or m.get("truncated") is True
        if m["role"] == "assistant" and not _is_summary(m) and not finished:
            problems.append(f"assistant {m['messageId']} neither finished nor truncated")
    if open_calls:
        problems.append(f"tool_use without a result: {sorted(open_calls)}")
    return problems


@dataclass
class SessionLedger:
    """What one client was told about one session."""

    sid: str
    parent: str | None = None
    streamed: dict[str, str] = field(default_factory=lambda: collections.defaultdict(str))
    finished: set[str] = field(default_factory=set)
    tool_calls: set[str] = field(default_factory=set)
    summaries: list[str] = field(default_factory=list)
    turns: set[str] = field(default_factory=set)
    title: str | None = None
    acknowledged: int = 0


class Ledger:
    def __init__(self) -> None:
        self.sessions: dict[str, SessionLedger] = {}

    def session(self, sid: str, parent: str | None = None) -> SessionLedger:
        entry = self.sessions.get(sid)
        if entry is None:
            entry = self.sessions[sid] = SessionLedger(sid, parent)
        return entry

    def file_updates(self, updates: list[dict[str, Any]]) -> None:
        """File every ``session/update`` a client received (live turns, no replays)."""
        for params in updates:
            sid = params["sessionId"]
            if sid not in self.sessions:
                continue
            entry = self.sessions[sid]
            u = params["update"]
            kind = u.get("sessionUpdate")
            turn = (u.get("_meta") or {}).get("threadline", {}).get("turnId")
            if turn:
                entry.turns.add(turn)
            if kind == "agent_message_chunk" and u.get("messageId"):
                entry.streamed[u["messageId"]] += u["content"]["text"]
            elif kind == "tool_call":
                entry.tool_calls.add(u["toolCallId"])
            elif kind == "compaction_update" and u.get("status") == "completed":
                entry.summaries.append("".join(b.get("text", "") for b in u.get("summary") or []))
            elif kind == "session_info_update" and u.get("title"):
                entry.title = u["title"]

    def file_result(self, sid: str, result: dict[str, Any]) -> None:
        """A ``session/prompt`` answer the client received."""
        entry = self.sessions[sid]
        entry.acknowledged += 1
        mid = (result.get("_meta") or {}).get("threadline", {}).get("messageId")
        if mid and result.get("stopReason") != "cancelled":
            entry.finished.add(mid)


def ledger_problems(entry: SessionLedger, messages: list[Message]) -> list[str]:
    problems: list[str] = []
    by_id = {m["messageId"]: m for m in messages}
    for mid, seen in entry.streamed.items():
        stored = by_id.get(mid)
        if stored is None:
            problems.append(f"streamed message {mid} ({seen[:40]!r}) is not stored")
            continue
        text = text_of(stored)
        if not text.startswith(seen):
            problems.append(f"{mid}: stored {text[:60]!r} does not start with seen {seen[:60]!r}")
        if mid in entry.finished and text != seen:
            problems.append(f"{mid}: finished answer stored as {text!r}, streamed {seen!r}")
    uses = {b["id"] for m in messages for b in m["content"] if b.get("type") == "tool_use"}
    missing = entry.tool_calls - uses
    if missing:
        problems.append(f"announced tool calls not stored: {sorted(missing)}")
    summaries = [text_of(m) for m in messages if _is_summary(m)]
    for s in entry.summaries:
        if s not in summaries:
            problems.append(f"announced compaction summary not stored: {s[:60]!r}")
    user_turns = {m["turnId"] for m in messages if m["role"] == "user"}
    for turn in entry.turns:
        if turn.startswith("a") and "u" + turn[1:] not in user_turns:
            problems.append(f"turn {turn} was announced but its user message is not stored")
    users = sum(1 for m in messages if m["role"] == "user")
    if users < entry.acknowledged:
        problems.append(f"{entry.acknowledged} prompts answered but {users} user messages")
    return problems
