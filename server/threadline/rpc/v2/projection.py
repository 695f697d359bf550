"""The projection for ACP v2 connections: the same engine events and stored messages as
``rpc/projection.py`` (v1), shown as v2's upserts.

v2 differs from v1 in what it says, not in what happened, so each update is made by
v1's builder of the same stored block and then reshaped here:

* messages: chunks while they stream (``messageId`` always set); stored history is
  replayed as whole-message upserts (``user_message``, ``agent_message``,
  ``agent_thought``), and a turn's own prompt is shown as ``user_message`` once stored
  (``PromptStored``: a v2 client learns its message id from the agent);
* tool calls: ``tool_call_update`` creates and patches (v1's ``tool_call`` is gone), a
  running call's growing output is appended with ``tool_call_content_chunk``; a
  command the sidecar runs is an agent-owned terminal instead (the call's content is
  a ``terminal`` reference; ``terminal_update`` says the command, its folder, a
  replacement snapshot of the output and at the end its exit, and
  ``terminal_output_chunk`` appends the new bytes), a
  cancelled call is ``cancelled`` (v1 says ``failed``), diffs are ``changes`` plus a
  ``git_patch`` (v1's ``oldText``/``newText`` are gone);
* plans: ``plan_update`` with a ``planId``;
* the lifecycle: ``state_update`` ``running`` / ``requires_action`` / ``idle``, the
  idle that ends foreground work carrying its stop reason (``WorkEnded``); a failure
  after the prompt was accepted is idle ``_failed`` with the error in ``_meta``;
* modes are config options (``config_option_update``);
* Threadline's ``_meta`` block is ``_meta._threadline`` (`meta.v2_meta`).

State kept per connection: the state last shown per session (a state is shown once),
and what each running tool call and terminal has shown (to send only what was
appended).
"""

from __future__ import annotations

import base64
import difflib
from collections.abc import Hashable
from dataclasses import replace
from typing import Any

from ...engine import events
from ...engine.blocks import Block, shown_text
from ...engine.mutations import Msg
from ...tools.base import CommandShown
from .. import projection as v1
from ..wire import wire
from .meta import v2_meta
from .options import v2_options

Update = dict[str, Any]

PLAN_ID = "plan"
"""A session has one plan (``update_plan`` replaces it whole)."""

FAILED = "_failed"
"""The stop reason of work that failed after its prompt was accepted (v2 reserves
``_``-prefixed values for implementations); the error is in ``_meta._threadline``."""

BUSY_STATES = {"running", "compacting", "repairing", "rewinding"}
"""Threadline's states that are v2's ``running`` (the detail stays in ``_meta``)."""


def _retag(update: Update) -> Update:
    if "_meta" in update:
        update["_meta"] = v2_meta(update["_meta"])
    return update


def _own(**fields: Any) -> dict[str, Any]:
    return {"_threadline": fields}


def git_patch(path: str, old: str | None, new: str) -> str:
    """One ``diff --git`` section in Git's patch format, absolute paths as v2 asks."""
    before = (old or "").splitlines()
    after = new.splitlines()
    source = path if old is not None else "/dev/null"
    body = list(difflib.unified_diff(before, after, source, path, lineterm=""))
    head = [f"diff --git {path} {path}"]
    if old is None:
        head.append("new file mode 100644")
    return "\n".join(head + body) + "\n"


def tool_content(item: dict[str, Any]) -> dict[str, Any]:
    """A v1 tool call content item as v2 has it (diffs reshaped; the rest as is)."""
    if item.get("type") != "diff" or "changes" in item:
        return item
    path, old, new = item["path"], item.get("oldText"), item.get("newText", "")
    change = {"operation": "add" if old is None else "modify", "path": path, "fileType": "text"}
    return {
        "type": "diff",
        "changes": [change],
        "patch": {"format": "git_patch", "text": git_patch(path, old, new)},
    }


def message_chunk(kind: str, message_id: str, turn_id: str, text: str) -> Update:
    return _retag(v1.message_chunk(kind, message_id, turn_id, text))


def whole_message(kind: str, message_id: str, content: list[Block], meta: dict[str, Any]) -> Update:
    """``user_message`` / ``agent_message`` / ``agent_thought``: the message's whole
    content (an upsert by ``messageId``)."""
    return {"sessionUpdate": kind, "messageId": message_id, "content": content, "_meta": meta}


def user_message(message: Msg) -> Update:
    meta = _own(turnId=message["turnId"], **v1.replay_marks(message))
    return whole_message("user_message", message["messageId"], list(message["content"]), meta)


def tool_call(block: Block, turn_id: str) -> Update:
    u = _retag(v1.tool_call(block, turn_id))
    u["sessionUpdate"] = "tool_call_update"
    if "content" in u:
        u["content"] = [tool_content(c) for c in u["content"]]
    return u


def tool_result(block: Block, terminal: str | None = None) -> Update:
    """The call's final patch: v2 has a ``cancelled`` status of its own. A command
    shown as a terminal keeps the reference first (the result follows it)."""
    u = v1.tool_result(block)
    if block.get("status") == "cancelled":
        u["status"] = "cancelled"
        u.pop("_meta", None)
    anchor = [] if terminal is None else [{"type": "terminal", "terminalId": terminal}]
    u["content"] = anchor + [tool_content(c) for c in u["content"]]
    return u


def terminal_id(call_id: str) -> str:
    """The agent-owned terminal a call's command runs in (one per call, never reused:
    call ids are unique)."""
    return f"terminal-{call_id}"


def _bytes(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def terminal_started(call_id: str, shown: CommandShown) -> list[Update]:
    """The call's content becomes the terminal's reference; the terminal's first
    upsert says what runs where and the output so far."""
    tid = terminal_id(call_id)
    return [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": tid}],
        },
        {
            "sessionUpdate": "terminal_update",
            "terminalId": tid,
            "command": shown.command,
            "cwd": shown.cwd,
            "output": {"data": _bytes(shown.output)},
        },
    ]


def terminal_output(call_id: str, before: str, now: str) -> list[Update]:
    """New output appended (``terminal_output_chunk``), or, when the kept output did not
    only grow (its middle was left out), a replacement snapshot."""
    tid = terminal_id(call_id)
    if not now.startswith(before):
        return [
            {"sessionUpdate": "terminal_update", "terminalId": tid, "output": {"data": _bytes(now)}}
        ]
    added = now[len(before) :]
    if not added:
        return []
    return [{"sessionUpdate": "terminal_output_chunk", "terminalId": tid, "data": _bytes(added)}]


def terminal_exited(block: Block) -> Update:
    """The command ended: its exit code or signal from the stored result (neither
    known for a cancelled call: an empty exit status still marks it ended)."""
    raw = block.get("rawOutput")
    exit_status: dict[str, Any] = {}
    if isinstance(raw, dict):
        if isinstance(raw.get("exitCode"), int) and raw["exitCode"] >= 0:
            exit_status["exitCode"] = raw["exitCode"]
        if isinstance(raw.get("signal"), str):
            exit_status["signal"] = raw["signal"]
    return {
        "sessionUpdate": "terminal_update",
        "terminalId": terminal_id(block["toolUseId"]),
        "exitStatus": exit_status,
    }


def plan(entries: list[dict[str, Any]]) -> Update:
    return {
        "sessionUpdate": "plan_update",
        "plan": {"type": "items", "planId": PLAN_ID, "entries": list(entries)},
    }


def tool_finished(block: Block, terminal: str | None = None) -> list[Update]:
    out = [tool_result(block, terminal)]
    if block.get("plan") is not None:
        out.append(plan(block["plan"]))
    return out


def summary(message_id: str, turn_id: str, block: Block) -> Update:
    """A compaction's summary: an agent message marked as one (v2's stable schema has
    no ``compaction_update``)."""
    content = [{"type": "text", "text": block["text"]}]
    return whole_message("agent_message", message_id, content, _own(turnId=turn_id, summary=True))


def state(name: str, stop_reason: str | None = None, **meta: Any) -> Update:
    u: Update = {"sessionUpdate": "state_update", "state": name}
    if stop_reason is not None:
        u["stopReason"] = stop_reason
    if meta:
        u["_meta"] = _own(**meta)
    return u


def available_commands(commands: tuple[tuple[str, str, str | None], ...]) -> Update:
    """v2's command ``input`` is a tagged union: ``{"type": "text", "hint"}``."""
    u = v1.available_commands(commands)
    for command in u["availableCommands"]:
        if "input" in command:
            command["input"] = {"type": "text", **command["input"]}
    return u


def replay(message: Msg) -> list[Update]:
    """A stored message as whole-message upserts and tool call patches, in order."""
    mid, turn, role = message["messageId"], message["turnId"], message["role"]
    meta = _own(turnId=turn, **v1.replay_marks(message))
    out: list[Update] = []
    texts: list[Block] = []
    at: int | None = None
    for block in message["content"]:
        t = block.get("type")
        if t == "tool_result":
            out.extend(tool_finished(block))
        elif role == "user" or t == "text":
            text = block if role == "user" else {"type": "text", "text": shown_text(block)}
            if role == "user" or text["text"]:
                at = len(out) if at is None else at
                texts.append(text)
        elif t == "thought" and block.get("text"):
            content = [{"type": "text", "text": block["text"]}]
            out.append(whole_message("agent_thought", mid, content, _own(turnId=turn)))
        elif t == "summary":
            out.append(summary(mid, turn, block))
        elif t in ("tool_use", "exit_signal"):
            out.append(tool_call(block, turn))
    if texts:
        kind = "user_message" if role == "user" else "agent_message"
        out.insert(at or 0, whole_message(kind, mid, texts, meta))
    return out


class ProjectionV2:
    """One v2 client's projection (`engine.events.ReplayProjection` for replays)."""

    variant: Hashable = ("acp", 2)

    def __init__(self) -> None:
        self._state: dict[str, str] = {}
        self._shown: dict[str, list[dict[str, Any]]] = {}
        self._terminals: dict[str, str] = {}
        """Per call whose command the sidecar runs: the output its terminal shows."""

    def replay(self, message: Msg) -> list[Update]:
        return replay(message)

    def session_updates(self, session_id: str, event: events.Event) -> list[Update]:
        match event:
            case events.MessageChunk(message_id, turn_id, text, thought):
                kind = "agent_thought_chunk" if thought else "agent_message_chunk"
                return [*self._running(session_id), message_chunk(kind, message_id, turn_id, text)]
            case events.PromptStored(message):
                return [user_message(message), *self._running(session_id)]
            case events.ToolCallStarted(block, turn_id):
                return [*self._running(session_id), tool_call(block, turn_id)]
            case events.ToolProgress(call_id, command=command) if command is not None:
                return self._terminal(call_id, command)
            case events.ToolProgress(call_id, content):
                return self._progress(call_id, content)
            case events.ToolFinished(block):
                self._shown.pop(block["toolUseId"], None)
                if self._terminals.pop(block["toolUseId"], None) is None:
                    return tool_finished(block)
                shown = terminal_id(block["toolUseId"])
                return [terminal_exited(block), *tool_finished(block, shown)]
            case events.Usage(used, size, cost):
                return [v1.usage_update(used, size, cost)]
            case events.SessionInfo():
                return self._session_info(session_id, event)
            case events.CompactionProgress():
                return []  # shown as the session's state (running, compacting)
            case events.Compacted(message_id, turn_id, block):
                return [summary(message_id, turn_id, block)]
            case events.AvailableCommands(commands):
                return [available_commands(commands)]
            case events.ConfigOptions(listed):
                options = [wire(o) for o in v2_options(listed)]
                return [{"sessionUpdate": "config_option_update", "configOptions": options}]
            case events.Replayed(message):
                return replay(message)
            case events.WorkEnded(stop_reason, error):
                self._state[session_id] = "idle"
                if stop_reason is not None:
                    return [state("idle", stop_reason)]
                code, text = error or (-32603, "failed")
                return [state("idle", FAILED, error={"code": code, "message": text})]
            case _:  # an event v2 has no update for
                return []

    def _running(self, session_id: str) -> list[Update]:
        """Foreground output implies running: shown once, before the first of it."""
        if self._state.get(session_id) == "running":
            return []
        self._state[session_id] = "running"
        return [state("running")]

    def _session_info(self, session_id: str, info: events.SessionInfo) -> list[Update]:
        out: list[Update] = []
        if info.state is not None:
            name = "running" if info.state in BUSY_STATES else info.state
            known = name in ("running", "idle", "requires_action")
            if known and self._state.get(session_id) != name:
                self._state[session_id] = name
                bare = events.SessionInfo(info.updated_at, state=info.state, owner=info.owner)
                detail = v1.session_info(bare)["_meta"]["threadline"]  # state, owner
                if info.state == name:
                    del detail["state"]
                out.append(state(name, **detail))
            rest = replace(info, state=None, owner=None)
            if rest == events.SessionInfo(info.updated_at):
                return out
            info = rest
        return [*out, _retag(v1.session_info(info))]

    def _terminal(self, call_id: str, shown: CommandShown) -> list[Update]:
        before = self._terminals.get(call_id)
        self._terminals[call_id] = shown.output
        if before is None:
            return terminal_started(call_id, shown)
        return terminal_output(call_id, before, shown.output)

    def _progress(self, call_id: str, content: tuple[dict[str, Any], ...] | None) -> list[Update]:
        """In progress; what a running call shows is appended when it only grew
        (``tool_call_content_chunk``), else replaced."""
        if content is None:
            return [v1.tool_progress(call_id, "in_progress")]
        items = [tool_content(c) for c in content]
        sent = self._shown.get(call_id)
        self._shown[call_id] = items
        added = _appended(sent, items) if sent is not None else None
        if added is None:
            return [v1.tool_progress(call_id, "in_progress", items)]
        return [
            {"sessionUpdate": "tool_call_content_chunk", "toolCallId": call_id, "content": c}
            for c in added
        ]


def _text_of(item: dict[str, Any]) -> str | None:
    inner = item.get("content")
    if item.get("type") == "content" and isinstance(inner, dict) and inner.get("type") == "text":
        text = inner.get("text")
        return text if isinstance(text, str) else None
    return None


def _appended(sent: list[dict[str, Any]], now: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """What was appended to ``sent`` to make ``now`` (new items, or the new end of a
    text that grew), or None when ``now`` is not ``sent`` grown."""
    if len(now) > len(sent) and now[: len(sent)] == sent:
        return now[len(sent) :]
    if len(now) != len(sent) or not sent or now[:-1] != sent[:-1]:
        return None
    before, after = _text_of(sent[-1]), _text_of(now[-1])
    if before is None or after is None or not after.startswith(before) or after == before:
        return None
    return [{"type": "content", "content": {"type": "text", "text": after[len(before) :]}}]
