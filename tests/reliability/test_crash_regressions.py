"""Regression tests for the faults the crash suite found: tool call ids that were not
unique, within a session and across sessions (the engine now mints every id)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.reliability.invariants import structural_problems
from tests.support import SidecarClient, scripted, start_sidecar

TOOL = {"name": "slow_tool", "inputSchema": {"type": "object"}}


async def answer_tools(client: SidecarClient) -> None:
    async def ok(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "ok"}]}

    client.on_request("tool/call", ok)


def tool_use_ids(messages: list[dict[str, Any]]) -> list[str]:
    return [b["id"] for m in messages for b in m["content"] if b["type"] == "tool_use"]


async def test_tool_call_ids_stay_unique_across_restarts(home: Path) -> None:
    """The engine kept the provider's ids; the scripted provider numbers calls from 1 in
    every process, so one history held two tool_use blocks with one id."""
    model = scripted([{"tool_call": {"name": "slow_tool", "arguments": {}}}], [{"text": "ok"}])
    sid = ""
    for life in range(2):
        client = await start_sidecar(home)
        try:
            await answer_tools(client)
            if life == 0:
                sid = await client.new_session(model=model, tools=[TOOL], builtinTools=False)
            assert (await client.prompt(sid, f"life {life}"))["stopReason"] == "end_turn"
            history = (await client.call("session/history", {"sessionId": sid}))["messages"]
        finally:
            await client.stop()
    ids = tool_use_ids(history)
    assert len(ids) == 2
    assert len(set(ids)) == 2, f"one id for two calls: {ids}"
    assert structural_problems(history) == []


async def test_a_provider_that_reuses_a_call_id_still_gets_unique_ids(
    sidecar: SidecarClient,
) -> None:
    """Providers may reuse call ids; the contract promises ids unique for ever
    (docs/protocol.md, Messages)."""
    same = {"tool_call": {"name": "slow_tool", "arguments": {}, "id": "call_0"}}
    await answer_tools(sidecar)
    sid = await sidecar.new_session(
        model=scripted([same], [{"text": "ok"}]), tools=[TOOL], builtinTools=False
    )
    for turn in range(2):
        assert (await sidecar.prompt(sid, f"turn {turn}"))["stopReason"] == "end_turn"
    history = (await sidecar.call("session/history", {"sessionId": sid}))["messages"]
    ids = tool_use_ids(history)
    assert len(ids) == 2 and len(set(ids)) == 2, f"one id for two calls: {ids}"
    announced = [
        u["update"]["toolCallId"]
        for u in sidecar.updates
        if u["update"]["sessionUpdate"] == "tool_call"
    ]
    assert sorted(announced) == sorted(ids)


async def test_tool_call_ids_are_unique_across_sessions(sidecar: SidecarClient) -> None:
    """Found while counting the crash suite's cancelled calls: the same id showed up in
    many sessions."""
    same = {"tool_call": {"name": "slow_tool", "arguments": {}, "id": "call_0"}}
    await answer_tools(sidecar)
    model = scripted([same], [{"text": "ok"}])
    ids: list[str] = []
    for _ in range(2):
        sid = await sidecar.new_session(model=model, tools=[TOOL], builtinTools=False)
        assert (await sidecar.prompt(sid, "go"))["stopReason"] == "end_turn"
        history = (await sidecar.call("session/history", {"sessionId": sid}))["messages"]
        ids += tool_use_ids(history)
    assert len(ids) == 2 and len(set(ids)) == 2, f"one id in two sessions: {ids}"
