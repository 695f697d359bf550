"""The projection from transcript blocks to ACP ``session/update`` payloads.

A live turn and a ``session/load`` replay go through the same functions: the turn
announces a tool call from the ``tool_use`` block it just stored, and a result from
the ``tool_result`` block it just stored; ``replay`` walks the stored messages and
calls the very same functions. So what a client is shown on load is what a live
client saw, minus the transitional updates that are not history (a call's
``in_progress``, a compaction's ``in_progress``, usage, status notices), and with each
block's text in one chunk instead of the bursts it streamed in.

Whatever is shown must therefore be stored: a ``tool_use`` block records the
``title``, ``kind`` and ``locations`` its tool gave when the call was made, a
``tool_result`` its ``rawOutput``, a ``summary`` its ``compactionId``.

These run on the streaming hot path, so they build dicts directly; the golden
fixtures (``tests/golden``) and the conformance hook of the test client check every
one against the protocol models and ACP's own schema.
"""

from __future__ import annotations

from typing import Any

Update = dict[str, Any]
Block = dict[str, Any]


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


def content_chunk(kind: str, message_id: str, turn_id: str, block: Block) -> Update:
    return {
        "sessionUpdate": kind,
        "messageId": message_id,
        "content": block,
        "_meta": _turn_meta(turn_id),
    }


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


def text_block(text: str, *, streamed: str) -> Block:
    """An answer's text without the tool call the model wrote in it, remembering the
    text as it streamed (what clients were shown) in ``_meta.threadline.streamed``."""
    return {"type": "text", "text": text, "_meta": {"threadline": {"streamed": streamed}}}


def shown_text(block: Block) -> str:
    """The text clients were shown for a stored text block."""
    meta = block.get("_meta")
    if isinstance(meta, dict):
        tl = meta.get("threadline")
        if isinstance(tl, dict) and isinstance(tl.get("streamed"), str):
            return tl["streamed"]
    return str(block.get("text", ""))


def call_block(
    call_id: str,
    name: str,
    arguments: dict[str, Any],
    *,
    title: str,
    kind: str,
    locations: list[dict[str, Any]],
) -> Block:
    """A ``tool_use`` block with what the client is shown of it."""
    return {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": arguments,
        "title": title,
        "kind": kind,
        "locations": locations,
    }


def tool_call(block: Block, turn_id: str) -> Update:
    """A ``tool_use`` block as ``tool_call`` (pending), an ``exit_signal`` block as a
    completed one (a signal is recorded, never run). Blocks stored before titles were
    recorded show the tool's name."""
    meta: dict[str, Any] = {"turnId": turn_id}
    if block["type"] == "exit_signal":
        meta["exitSignal"] = True
        raw_input, status = block.get("arguments"), "completed"
    else:
        raw_input, status = block.get("input"), "pending"
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": block.get("id") or f"exit-{block['name']}",
        "title": block.get("title") or block["name"],
        "kind": block.get("kind") or "other",
        "status": status,
        "rawInput": raw_input,
        "locations": block.get("locations") or [],
        "_meta": {"threadline": meta},
    }


def tool_progress(tool_call_id: str, status: str) -> Update:
    """A transitional status (``in_progress``): live only, not history."""
    return {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, "status": status}


def tool_result(block: Block) -> Update:
    """A ``tool_result`` block as the call's final ``tool_call_update``. ACP has no
    ``cancelled`` tool status: a cancelled call is ``failed`` with
    ``_meta.threadline.cancelled``."""
    status = block.get("status", "completed")
    u: Update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": block["toolUseId"],
        "status": "completed" if status == "completed" else "failed",
        "content": [{"type": "content", "content": c} for c in block.get("content", [])],
    }
    if block.get("rawOutput") is not None:
        u["rawOutput"] = block["rawOutput"]
    if status == "cancelled":
        u["_meta"] = {"threadline": {"cancelled": True}}
    return u


def compaction(
    compaction_id: str, status: str, summary: str | None = None, error: str | None = None
) -> Update:
    """ACP's ``compaction_update``: the summary is content blocks, a failure ``error``."""
    u: Update = {
        "sessionUpdate": "compaction_update",
        "compactionId": compaction_id,
        "status": status,
    }
    if summary is not None:
        u["summary"] = [{"type": "text", "text": summary}]
    if error is not None:
        u["error"] = error
    return u


def summary_block(text: str, compaction_id: str) -> Block:
    return {"type": "summary", "text": text, "compactionId": compaction_id}


def shows_compaction(client_capabilities: dict[str, Any]) -> bool:
    """ACP lets an agent send ``compaction_update`` only to a client that advertised
    ``session.compaction``."""
    session = client_capabilities.get("session")
    return isinstance(session, dict) and isinstance(session.get("compaction"), dict)


def compacted(message_id: str, turn_id: str, block: Block, *, shown: bool) -> Update:
    """A committed ``summary`` block: the compaction's completed update for a client that
    shows compactions, else the summary as an agent message."""
    if not shown:
        return message_chunk("agent_message_chunk", message_id, turn_id, block["text"])
    return compaction(block.get("compactionId") or message_id, "completed", summary=block["text"])


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


def replay(message: dict[str, Any], *, compaction: bool) -> list[Update]:
    """One stored message as the updates a live client was shown for it;
    ``compaction``: the client shows ``compaction_update``. Text chunks also carry
    what is known only in hindsight (`replay_marks`) in ``_meta.threadline``, which
    clients that do not know Threadline ignore."""
    mid, turn, role = message["messageId"], message["turnId"], message["role"]
    marks = replay_marks(message)
    out: list[Update] = []
    for block in message["content"]:
        t = block.get("type")
        if t == "tool_result":
            out.append(tool_result(block))
        elif role == "user":
            out.append(marked(content_chunk("user_message_chunk", mid, turn, block), marks))
        elif t == "text":
            text = shown_text(block)
            if text:
                out.append(marked(message_chunk("agent_message_chunk", mid, turn, text), marks))
        elif t == "thought":
            if block.get("text"):
                out.append(message_chunk("agent_thought_chunk", mid, turn, block["text"]))
        elif t == "summary":
            out.append(compacted(mid, turn, block, shown=compaction))
        elif t in ("tool_use", "exit_signal"):
            out.append(tool_call(block, turn))
    return out
