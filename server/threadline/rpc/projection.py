"""The projection from engine events and stored messages to ACP ``session/update``s.

The engine announces typed events (`engine/events.py`); a client's link projects
them here. A live event and a ``session/load`` replay go through the same functions:
the turn announces a tool call with the ``tool_use`` block it just stored, and a
result with the ``tool_result`` block it just stored; ``replay`` walks the stored
messages and calls the very same functions. So what a client is shown on load is
what a live client saw, minus the transitional updates that are not history (a
call's ``in_progress``, a compaction's ``in_progress``, usage, status notices), and
with each block's text in one chunk instead of the bursts it streamed in. Whatever is
shown must therefore be stored (`engine/blocks.py`).

These run on the streaming hot path, so they build dicts directly; the golden
fixtures (``tests/golden``) and the conformance hook of the test client check every
one against the protocol models and ACP's own schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadline_protocol.sessions import SessionConfigOption

from ..engine import events
from ..engine.blocks import Block, shown_text
from ..engine.cost import CURRENCY
from ..engine.mutations import Msg

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
        **({"content": block["content"]} if block.get("content") else {}),
        "_meta": {"threadline": meta},
    }


def tool_progress(
    tool_call_id: str,
    status: str,
    content: Sequence[dict[str, Any]] | None = None,
    child_session_id: str | None = None,
) -> Update:
    """A transitional status (``in_progress``), or the content a running call shows so
    far (a command's output, its terminal, the child session it runs): live only."""
    u: Update = {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, "status": status}
    if content is not None:
        u["content"] = list(content)
    if child_session_id is not None:
        u["_meta"] = {"threadline": {"childSessionId": child_session_id}}
    return u


def tool_result(block: Block) -> Update:
    """A ``tool_result`` block as the call's final ``tool_call_update``. ACP has no
    ``cancelled`` tool status: a cancelled call is ``failed`` with
    ``_meta.threadline.cancelled``."""
    status = block.get("status", "completed")
    u: Update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": block["toolUseId"],
        "status": "completed" if status == "completed" else "failed",
        "content": [
            *block.get("display", []),
            *({"type": "content", "content": c} for c in block.get("content", [])),
        ],
    }
    if block.get("rawOutput") is not None:
        u["rawOutput"] = block["rawOutput"]
    meta: dict[str, Any] = {}
    if status == "cancelled":
        meta["cancelled"] = True
    if block.get("childSessionId"):
        meta["childSessionId"] = block["childSessionId"]
    if meta:
        u["_meta"] = {"threadline": meta}
    return u


def plan(entries: Sequence[dict[str, Any]]) -> Update:
    """ACP's ``plan``: the whole list, replacing what the client showed before."""
    return {"sessionUpdate": "plan", "entries": list(entries)}


def tool_finished(block: Block) -> list[Update]:
    """A stored ``tool_result``: the call's final update, then the plan it set (an
    ``update_plan`` call), live and on replay alike."""
    out = [tool_result(block)]
    if block.get("plan") is not None:
        out.append(plan(block["plan"]))
    return out


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


def opted_in(client_capabilities: dict[str, Any], name: str) -> bool:
    """Whether a client advertised ``session.<name>`` (present and not null): ACP lets
    an agent send ``compaction_update`` only to a client that advertised
    ``session.compaction``, and (the SDK's schema) ``notice`` only with
    ``session.notices``."""
    session = client_capabilities.get("session")
    return isinstance(session, dict) and isinstance(session.get(name), dict)


def notice(text: str) -> Update:
    """ACP's unstable ``notice``: a status notice as an advisory, live only."""
    return {"sessionUpdate": "notice", "severity": "info", "title": text}


def compacted(message_id: str, turn_id: str, block: Block, *, shown: bool) -> Update:
    """A committed ``summary`` block: the compaction's completed update for a client that
    shows compactions, else the summary as an agent message."""
    if not shown:
        update = message_chunk("agent_message_chunk", message_id, turn_id, block["text"])
        return marked(update, {"summary": True})
    return compaction(block.get("compactionId") or message_id, "completed", summary=block["text"])


def usage_update(used: int, size: int, cost: float | None = None) -> Update:
    """ACP's ``usage_update``; ``cost`` (the session's, USD) only when it has one."""
    u: Update = {"sessionUpdate": "usage_update", "used": used, "size": size}
    if cost is not None:
        u["cost"] = {"amount": round(cost, 6), "currency": CURRENCY}
    return u


def session_info(info: events.SessionInfo) -> Update:
    """``session_info_update``: ACP's title, and the rest under ``_meta.threadline``."""
    u: Update = {"sessionUpdate": "session_info_update", "updatedAt": info.updated_at}
    if info.title is not None:
        u["title"] = info.title
    meta: dict[str, Any] = {}
    if info.status is not None:
        meta["status"] = info.status
    if info.watching is not None:
        meta["watching"] = info.watching
    if info.state is not None:
        meta["state"] = info.state
    if info.owner is not None:
        o = info.owner
        meta["owner"] = {"pid": o.pid, "host": o.host, "since": o.since, "here": o.here}
    if info.queue is not None:
        meta["queue"] = [
            {
                "id": q.id,
                "mode": q.mode,
                "state": q.state,
                "prompt": q.prompt,
                "createdAt": q.created_at,
            }
            for q in info.queue
        ]
    if info.model is not None:
        meta["model"] = info.model
    if info.forked is not None:
        meta["forked"] = {"sessionId": info.forked[0], "forkedAtMessageId": info.forked[1]}
    if info.deleted:
        meta["deleted"] = True
    if info.rewound is not None:
        meta["rewound"] = info.rewound
    if info.warning is not None:
        meta["warning"] = info.warning
    if meta:
        u["_meta"] = {"threadline": meta}
    return u


def available_commands(commands: Sequence[tuple[str, str, str | None]]) -> Update:
    return {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [
            {"name": n, "description": d, **({"input": {"hint": h}} if h else {})}
            for n, d, h in commands
        ],
    }


def current_mode(mode_id: str) -> Update:
    """ACP's ``current_mode_update``."""
    return {"sessionUpdate": "current_mode_update", "currentModeId": mode_id}


def config_options(listed: Sequence[SessionConfigOption]) -> Update:
    """ACP's ``config_option_update``: every option as it is now."""
    return {"sessionUpdate": "config_option_update", "configOptions": [o.wire() for o in listed]}


def replay(message: Msg, *, compaction: bool) -> list[Update]:
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
            out.extend(tool_finished(block))
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


class Projection:
    """One client's projection: what it is shown for each engine event, and for each
    stored message on ``session/load`` (`engine.events.ReplayProjection`). Clients
    differ only in the unstable updates they opted in to, each by the capability
    that names it: ``compaction_update`` (``session.compaction``; else a summary is an
    agent message, and compaction progress is not shown) and ``notice``
    (``session.notices``; else a status notice is only ``session_info_update``
    ``_meta``). A client that advertised neither gets ACP's stable updates only."""

    __slots__ = ("shows_compaction", "shows_notices")

    def __init__(self, *, shows_compaction: bool, shows_notices: bool = False) -> None:
        self.shows_compaction = shows_compaction
        self.shows_notices = shows_notices

    @classmethod
    def for_client(cls, client_capabilities: dict[str, Any]) -> Projection:
        return cls(
            shows_compaction=opted_in(client_capabilities, "compaction"),
            shows_notices=opted_in(client_capabilities, "notices"),
        )

    @property
    def variant(self) -> bool:
        return self.shows_compaction

    def replay(self, message: Msg) -> list[Update]:
        return replay(message, compaction=self.shows_compaction)

    def session_updates(self, session_id: str, event: events.Event) -> list[Update]:
        """`updates`; the session matters only to a projection that keeps state per
        session (v2's, ``rpc/v2/projection.py``)."""
        return self.updates(event)

    def updates(self, event: events.Event) -> list[Update]:
        """The ``session/update`` payloads a live event is shown as (none for progress
        a client does not show). Streamed text comes first: it is most of them."""
        match event:
            case events.MessageChunk(message_id, turn_id, text, thought):
                kind = "agent_thought_chunk" if thought else "agent_message_chunk"
                return [message_chunk(kind, message_id, turn_id, text)]
            case events.ToolCallStarted(block, turn_id):
                return [tool_call(block, turn_id)]
            case events.ToolProgress(tool_call_id, content, child):
                return [tool_progress(tool_call_id, "in_progress", content, child)]
            case events.ToolFinished(block):
                return tool_finished(block)
            case events.Usage(used, size, cost):
                return [usage_update(used, size, cost)]
            case events.SessionInfo(status=status):
                if status and self.shows_notices:
                    return [session_info(event), notice(status)]
                return [session_info(event)]
            case events.CompactionProgress(compaction_id, status, error):
                if not self.shows_compaction:
                    return []
                return [compaction(compaction_id, status, error=error)]
            case events.Compacted(message_id, turn_id, block):
                return [compacted(message_id, turn_id, block, shown=self.shows_compaction)]
            case events.AvailableCommands(commands):
                return [available_commands(commands)]
            case events.ModeChanged(mode_id):
                return [current_mode(mode_id)]
            case events.ConfigOptions(listed):
                return [config_options(listed)]
            case events.Replayed(message):
                return self.replay(message)
            case events.PromptStored() | events.WorkEnded():
                return []  # a v1 client sent the prompt and gets its end as the answer
