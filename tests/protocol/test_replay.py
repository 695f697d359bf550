"""``session/load`` replays exactly what a live client was shown.

One session gets everything a transcript can hold: thoughts and text, tool calls that
complete, fail, are refused (bad arguments) and are cancelled, and a compaction. Then
the sidecar restarts and ``session/load`` replays it; the replay must equal the live
updates, except for what is not history: transitional states (a call's or a
compaction's ``in_progress``), usage and status notices, and the bursts text streamed
in (a replay sends each block's text as one chunk). The user's own prompts, which a
live client typed rather than received, come back as ``user_message_chunk``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.support import SidecarClient, start_sidecar

PAD = " with some detail" * 40  # long turns: a summary must be shorter than what it replaces

SCRIPT = {
    "rounds": [
        [
            {"thought": "The notes first."},
            {"text": "Reading the notes. "},
            {"tool_call": {"name": "read_file", "arguments": {"path": "notes.txt"}}},
            {"tool_call": {"name": "read_file", "arguments": {"path": "missing.txt"}}},
            {"tool_call": {"name": "read_file", "arguments": {"start": 3}}},
            {"tool_call": {"name": "ask_user", "arguments": {"question": "Go on?"}}},
        ],
        [{"text": "Done: the notes say hello."}],
    ],
    "summary": [{"text": "Read the notes twice."}],
}
ASK_USER = {
    "name": "ask_user",
    "description": "Ask the user a question",
    "inputSchema": {"type": "object", "properties": {"question": {"type": "string"}}},
}
TRANSIENT = {"usage_update", "session_info_update", "available_commands_update"}


HINDSIGHT = ("compacted", "truncated")
"""Marks only a replay can give (`rpc/projection.py`'s `replay_marks`): the rest must be equal."""


def unmarked(u: dict[str, Any]) -> dict[str, Any]:
    meta = (u.get("_meta") or {}).get("threadline")
    if not meta or not any(k in meta for k in HINDSIGHT):
        return u
    kept = {k: v for k, v in meta.items() if k not in HINDSIGHT}
    return {**u, "_meta": {**u["_meta"], "threadline": kept}}


def shown(updates: list[dict[str, Any]], sid: str) -> list[dict[str, Any]]:
    """What stays on a client's screen: no transitional states, text per block."""
    out: list[dict[str, Any]] = []
    for params in updates:
        if params["sessionId"] != sid:
            continue
        u = params["update"]
        kind = u["sessionUpdate"]
        if kind in TRANSIENT or u.get("status") == "in_progress":
            continue
        u = unmarked(u)
        last = out[-1] if out else None
        if (
            kind.endswith("_chunk")
            and last is not None
            and last["sessionUpdate"] == kind
            and last.get("messageId") == u.get("messageId")
        ):
            text = last["content"]["text"] + u["content"]["text"]
            out[-1] = {**last, "content": {**last["content"], "text": text}}
            continue
        out.append(u)
    return out


async def test_load_after_a_restart_replays_what_the_live_client_saw(
    home: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    prompts = [f"Read the notes, turn {n}.{PAD}" for n in (1, 2, 3)]

    live = await start_sidecar(home)
    try:
        hang = asyncio.Event()
        hanging = asyncio.Event()

        async def ask_user(params: dict[str, Any]) -> dict[str, Any]:
            if hang.is_set():
                hanging.set()
                await asyncio.sleep(3600)
            return {"content": [{"type": "text", "text": "yes"}]}

        live.on_request("tool/call", ask_user)
        sid = await live.new_session(
            str(workspace), model="scripted:" + json.dumps(SCRIPT), tools=[ASK_USER]
        )
        for text in prompts[:2]:
            assert (await live.prompt(sid, text))["stopReason"] == "end_turn"
        compacted = await live.call("session/compact", {"sessionId": sid, "keepTurns": 1})
        assert compacted["_meta"]["threadline"]["compacted"] is True

        hang.set()  # the third turn is cancelled while the client runs ask_user
        turn = asyncio.ensure_future(live.prompt(sid, prompts[2]))
        await asyncio.wait_for(hanging.wait(), 30)
        live.notify("session/cancel", {"sessionId": sid})
        assert (await turn)["stopReason"] == "cancelled"
        seen = shown(live.updates, sid)
    finally:
        await live.stop()

    calls = [u for u in seen if u["sessionUpdate"] == "tool_call"]
    results = {u["toolCallId"]: u for u in seen if u["sessionUpdate"] == "tool_call_update"}
    assert [c["title"] for c in calls[:4]] == [
        "Read notes.txt",
        "Read missing.txt",
        "Read file",
        "ask_user",
    ]
    assert calls[0]["kind"] == "read" and calls[0]["locations"][0]["path"].endswith("notes.txt")
    by_title = [(c["title"], results[c["toolCallId"]]) for c in calls]
    assert [(t, r["status"]) for t, r in by_title[:4]] == [
        ("Read notes.txt", "completed"),
        ("Read missing.txt", "failed"),
        ("Read file", "failed"),  # refused: 'path' is required
        ("ask_user", "completed"),
    ]
    assert "invalid arguments" in by_title[2][1]["content"][0]["content"]["text"]
    assert by_title[-1][0] == "ask_user" and by_title[-1][1]["_meta"]["threadline"]["cancelled"]
    assert [u["status"] for u in seen if u["sessionUpdate"] == "compaction_update"] == ["completed"]
    assert not [u for u in seen if u["sessionUpdate"] == "user_message_chunk"]
    assert any(u["sessionUpdate"] == "agent_thought_chunk" for u in seen)

    again: SidecarClient = await start_sidecar(home)
    try:
        loaded = await again.call("session/load", {"sessionId": sid, "cwd": str(workspace)})
        assert [o["id"] for o in loaded["configOptions"]] == ["model", "mode", "builtinTools"]
        assert loaded["modes"]["currentModeId"] == "code"
        replayed = shown(again.updates, sid)
    finally:
        await again.stop()

    typed = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert typed == prompts
    assert [u for u in replayed if u["sessionUpdate"] != "user_message_chunk"] == seen


async def test_a_call_written_as_text_replays_as_it_streamed(home: Path, tmp_path: Path) -> None:
    """A text-only model (the embedded one) writes its call as JSON in the answer: the
    client saw that text stream, so the replay shows it too, though the model's
    history keeps the answer without it."""
    (tmp_path / "notes.txt").write_text("hello\n")
    written = 'Let me look. {"tool": "read_file", "arguments": {"path": "notes.txt"}}'
    script = {"rounds": [[{"text": written}], [{"text": "It says hello."}]]}
    live = await start_sidecar(home)
    try:
        sid = await live.new_session(str(tmp_path), model="scripted:" + json.dumps(script))
        assert (await live.prompt(sid, "What do the notes say?"))["stopReason"] == "end_turn"
        seen = shown(live.updates, sid)
        history = (await live.call("session/history", {"sessionId": sid}))["messages"]
    finally:
        await live.stop()
    assert history[1]["content"][0]["text"] == "Let me look."
    assert [u["content"]["text"] for u in seen if u["sessionUpdate"] == "agent_message_chunk"] == [
        written,
        "It says hello.",
    ]
    assert [u["title"] for u in seen if u["sessionUpdate"] == "tool_call"] == ["Read notes.txt"]

    again = await start_sidecar(home)
    try:
        await again.call("session/load", {"sessionId": sid, "cwd": str(tmp_path)})
        replayed = shown(again.updates, sid)
    finally:
        await again.stop()
    assert [u for u in replayed if u["sessionUpdate"] != "user_message_chunk"] == seen


async def test_a_client_without_compaction_support_sees_the_summary_as_a_message(
    home: Path,
) -> None:
    """ACP sends ``compaction_update`` only to clients that advertise
    ``session.compaction``; others are shown the summary as an agent message, live and
    on replay alike."""
    script = {"rounds": [[{"text": "An answer."}]], "summary": [{"text": "Short summary."}]}
    live = await start_sidecar(home, initialize=False)
    try:
        await live.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        sid = await live.new_session(model="scripted:" + json.dumps(script))
        for n in range(3):
            await live.prompt(sid, f"Question {n}.{PAD}")
        result = await live.call("session/compact", {"sessionId": sid, "keepTurns": 1})
        assert result["summary"] == "Short summary."
        seen = shown(live.updates, sid)
        summary_id = (await live.call("session/history", {"sessionId": sid}))["messages"][-1][
            "messageId"
        ]
    finally:
        await live.stop()
    assert not [u for u in seen if u["sessionUpdate"] == "compaction_update"]
    assert seen[-1]["sessionUpdate"] == "agent_message_chunk"
    assert seen[-1]["messageId"] == summary_id
    assert seen[-1]["content"]["text"] == "Short summary."

    again = await start_sidecar(home, initialize=False)
    try:
        await again.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        await again.call("session/load", {"sessionId": sid, "cwd": "/tmp"})
        replayed = shown(again.updates, sid)
    finally:
        await again.stop()
    assert [u for u in replayed if u["sessionUpdate"] != "user_message_chunk"] == seen
