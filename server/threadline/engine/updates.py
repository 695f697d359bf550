"""Builders for ``session/update`` payloads, as plain dicts.

These run on the streaming hot path, so they build dicts directly instead of
validating models; ``tests/unit/test_update_shapes.py`` checks every builder against
the protocol models so the two cannot drift.
"""

from __future__ import annotations

from typing import Any

Update = dict[str, Any]


def _turn_meta(turn_id: str) -> dict[str, Any]:
    return {"threadline": {"turnId": turn_id}}


def message_chunk(kind: str, message_id: str, turn_id: str, text: str) -> Update:
    """``agent_message_chunk`` / ``agent_thought_chunk`` / ``user_message_chunk``."""
    return {
        "sessionUpdate": kind,
        "messageId": message_id,
        "content": {"type": "text", "text": text},
        "_meta": _turn_meta(turn_id),
    }


def content_chunk(
    kind: str, message_id: str, turn_id: str, block: dict[str, Any], *, ephemeral: bool = False
) -> Update:
    """``ephemeral``: sent to the model for one request only, never in history."""
    meta = _turn_meta(turn_id)
    if ephemeral:
        meta["threadline"]["ephemeral"] = True
    return {"sessionUpdate": kind, "messageId": message_id, "content": block, "_meta": meta}


def replay_marks(message: dict[str, Any]) -> dict[str, Any]:
    """What a replayed message was: taken out of the prompt by a compaction, or cut
    off by an interrupt. Live updates never carry these; clients show them on resume."""
    marks: dict[str, Any] = {}
    if message.get("compacted"):
        marks["compacted"] = True
    if message.get("truncated"):
        marks["truncated"] = True
    return marks


def marked(update: Update, marks: dict[str, Any]) -> Update:
    """``update`` with ``marks`` added to its ``_meta.threadline``."""
    if marks:
        update["_meta"]["threadline"].update(marks)
    return update


def tool_call(
    tool_call_id: str,
    title: str,
    kind: str,
    raw_input: Any,
    turn_id: str,
    *,
    locations: list[dict[str, Any]] | None = None,
    status: str = "pending",
    exit_signal: bool = False,
) -> Update:
    meta: dict[str, Any] = {"turnId": turn_id}
    if exit_signal:
        meta["exitSignal"] = True
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": tool_call_id,
        "title": title,
        "kind": kind,
        "status": status,
        "rawInput": raw_input,
        "locations": locations or [],
        "_meta": {"threadline": meta},
    }


def tool_call_update(
    tool_call_id: str,
    status: str,
    *,
    content: list[dict[str, Any]] | None = None,
    raw_output: Any = None,
    cancelled: bool = False,
) -> Update:
    u: Update = {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, "status": status}
    if content is not None:
        u["content"] = [{"type": "content", "content": c} for c in content]
    if raw_output is not None:
        u["rawOutput"] = raw_output
    if cancelled:
        u["_meta"] = {"threadline": {"cancelled": True}}
    return u


def usage_update(used: int, size: int) -> Update:
    return {"sessionUpdate": "usage_update", "used": used, "size": size}


def session_info(title: str | None, updated_at: str, status: str | None = None) -> Update:
    u: Update = {"sessionUpdate": "session_info_update", "updatedAt": updated_at}
    if title is not None:
        u["title"] = title
    if status is not None:
        u["_meta"] = {"threadline": {"status": status}}
    return u


def available_commands(commands: list[tuple[str, str, str | None]]) -> Update:
    return {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [
            {"name": n, "description": d, **({"input": {"hint": h}} if h else {})}
            for n, d, h in commands
        ],
    }


def compaction(
    compaction_id: str, status: str, summary: str | None = None, message: str | None = None
) -> Update:
    u: Update = {
        "sessionUpdate": "compaction_update",
        "compactionId": compaction_id,
        "status": status,
    }
    if summary is not None:
        u["summary"] = summary
    if message is not None:
        u["message"] = message
    return u
