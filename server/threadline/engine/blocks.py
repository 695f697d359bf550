"""Every content block and message the engine stores, built here and nowhere else.

Whatever a client is shown must be stored, so that ``session/load`` can show it again
(`rpc/projection.py` makes both from the same blocks): a ``tool_use`` block records
the ``title``, ``kind`` and ``locations`` its tool gave when the call was made, a
text block the text as it streamed when a call was taken out of it, a ``summary``
its ``compactionId``. Messages are stored in their wire shape (``session/history``
answers with them as they are), so their keys and the order of those keys are made
in one place: a message built twice the same way is the same JSON.
"""

from __future__ import annotations

from typing import Any, Literal

from .ids import new_id, now_iso
from .mutations import Msg

Block = dict[str, Any]
Role = Literal["user", "assistant", "tool"]
ToolStatus = Literal["completed", "failed", "cancelled"]

# -- blocks ---------------------------------------------------------------------------


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def text_block(value: str, *, streamed: str) -> Block:
    """An answer's text without the tool call the model wrote in it, remembering the
    text as it streamed (what clients were shown) in ``_meta.threadline.streamed``."""
    return {"type": "text", "text": value, "_meta": {"threadline": {"streamed": streamed}}}


def thought(value: str, signature: str | None = None, extra: dict[str, Any] | None = None) -> Block:
    """A reasoning block; ``signature`` and the provider's ``extra`` keys are sent back
    to the provider with it."""
    block: Block = {"type": "thought", "text": value}
    if signature is not None:
        block["signature"] = signature
    if extra:
        block.update(extra)
    return block


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
    content: list[dict[str, Any]] | None = None,
) -> Block:
    """A ``tool_use`` block with what the client is shown of it; ``content``: what the
    call would do (an edit's diff), shown from its first ``tool_call`` on."""
    block: Block = {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": arguments,
        "title": title,
        "kind": kind,
        "locations": locations,
    }
    if content:
        block["content"] = content
    return block


def bare_call_block(call_id: str, name: str, arguments: dict[str, Any]) -> Block:
    """A ``tool_use`` block with nothing for the client beyond the call itself."""
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def exit_block(call_id: str, name: str, arguments: dict[str, Any]) -> Block:
    """A call of an exit tool: a signal recorded, never run, never sent back as a call."""
    return {"type": "exit_signal", "id": call_id, "name": name, "arguments": arguments}


def result_block(
    call_id: str,
    tool_name: str | None,
    content: list[Block],
    *,
    is_error: bool,
    status: ToolStatus,
    compact_summary: str | None = None,
    raw_output: Any = None,
    display: list[dict[str, Any]] | None = None,
    plan: list[dict[str, Any]] | None = None,
    child_session_id: str | None = None,
) -> Block:
    """A call's ``tool_result``: what the tool gave (or why it never ran); ``display``:
    what clients are shown before it (its diff, its terminal), ``plan``: the plan an
    ``update_plan`` call set (shown as ACP's ``plan`` update, live and on replay)."""
    block: Block = {
        "type": "tool_result",
        "toolUseId": call_id,
        "toolName": tool_name,
        "content": content,
        "isError": is_error,
        "status": status,
    }
    if compact_summary:
        block["compactSummary"] = compact_summary
    if raw_output is not None:
        block["rawOutput"] = raw_output
    if display:
        block["display"] = display
    if plan is not None:
        block["plan"] = plan
    if child_session_id is not None:
        block["childSessionId"] = child_session_id
    return block


def cancelled_result_block(call_id: str, tool_name: str | None, reason: str) -> Block:
    """The result of a call that will never finish, so every ``tool_use`` has one."""
    return result_block(
        call_id,
        tool_name,
        [text(f"Tool call cancelled: {reason}.")],
        is_error=True,
        status="cancelled",
    )


def summary_block(value: str, compaction_id: str) -> Block:
    return {"type": "summary", "text": value, "compactionId": compaction_id}


# -- messages -------------------------------------------------------------------------


def message(
    role: Role,
    turn_id: str,
    content: list[Block],
    *,
    message_id: str | None = None,
    model: str | None = None,
    usage: dict[str, Any] | None = None,
    stop_reason: str | None = None,
    error: str | None = None,
) -> Msg:
    """A stored message; the optional keys are written only when given."""
    msg: Msg = {
        "messageId": message_id or new_id("msg"),
        "turnId": turn_id,
        "role": role,
        "content": content,
        "createdAt": now_iso(),
    }
    if model is not None:
        msg["model"] = model
    if usage is not None:
        msg["usage"] = usage
    if stop_reason is not None:
        msg["stopReason"] = stop_reason
    if error is not None:
        msg["error"] = error
    return msg


def user_message(turn_number: int, content: list[Block], message_id: str | None = None) -> Msg:
    """The prompt of turn ``turn_number`` (its turn id is ``u<n>``), or a prompt that
    joined it (steering); ``message_id`` is the id it was announced under while it
    waited."""
    return message("user", f"u{turn_number}", content, message_id=message_id)


def tool_message(turn_id: str, result: Block) -> Msg:
    return message("tool", turn_id, [result])


def truncated_answer(
    message_id: str, turn_id: str, content: list[Block], model: str | None, error: str
) -> Msg:
    """A partial answer cut off by an interrupt, a failure, a fork or a crash."""
    msg: Msg = {
        "messageId": message_id,
        "turnId": turn_id,
        "role": "assistant",
        "content": content,
        "createdAt": now_iso(),
        "model": model,
        "truncated": True,
        "error": error,
    }
    return msg


def failed_answer(
    message_id: str,
    turn_id: str,
    content: list[Block],
    *,
    model: str,
    usage: dict[str, Any] | None,
    error: str | None,
) -> Msg:
    """The part of an answer that came back before its model call failed (or looped)."""
    msg = message("assistant", turn_id, content, message_id=message_id, model=model, usage=usage)
    msg["truncated"] = True
    if error is not None:
        msg["error"] = error
    return msg


def summary_message(value: str, compaction_id: str, turn_id: str, model: str) -> Msg:
    """The assistant message a summary is stored as (one ``summary`` block)."""
    return message("assistant", turn_id, [summary_block(value, compaction_id)], model=model)
