"""Sessions survive restarts and ``kill -9``: what a client saw is what is stored."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
from pathlib import Path

from tests.support import SidecarClient, scripted, start_sidecar

HELLO = scripted([{"text": "Stored answer."}])
HANG = scripted([{"text": "half "}, {"text": "an answer"}, {"hang": True}])
TOOL_THEN_HANG = scripted([{"tool_call": {"name": "slow_tool", "arguments": {"x": 1}}}])
SLOW_TOOL = [
    {"name": "slow_tool", "description": "never answers", "inputSchema": {"type": "object"}}
]


async def history(client: SidecarClient, sid: str) -> list[dict]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


async def test_restart_keeps_sessions(home: Path) -> None:
    first = await start_sidecar(home)
    sid = await first.new_session(model=HELLO)
    await first.prompt(sid, "remember this")
    before = await history(first, sid)
    await first.stop()

    second = await start_sidecar(home)
    try:
        listed = (await second.call("session/list", {}))["sessions"]
        assert [s["sessionId"] for s in listed] == [sid]
        assert await history(second, sid) == before
        assert (await second.prompt(sid, "and again"))["stopReason"] == "end_turn"
        assert [m["turnId"] for m in await history(second, sid)] == ["u1", "a1", "u2", "a2"]
    finally:
        await second.stop()


async def test_kill_9_mid_stream_recovers_a_truncated_answer(home: Path) -> None:
    first = await start_sidecar(home)
    sid = await first.new_session(model=HANG)
    prompt = asyncio.ensure_future(first.prompt(sid, "go"))
    await first.wait_update(lambda u: "an answer" in str(u.get("update", {}).get("content")))
    seen = first.text_of(sid)
    assert first._server is not None
    os.kill(first._server.pid, signal.SIGKILL)
    await first.stop()
    prompt.cancel()

    second = await start_sidecar(home)
    try:
        msgs = await history(second, sid)
        assert [m["role"] for m in msgs] == ["user", "assistant"]
        assert msgs[1]["truncated"] is True
        assert msgs[1]["content"] == [{"type": "text", "text": seen}]
        await second.call(
            "session/set_config_option", {"sessionId": sid, "configId": "model", "value": HELLO}
        )
        assert (await second.prompt(sid, "still there?"))["stopReason"] == "end_turn"
    finally:
        await second.stop()


async def test_kill_9_during_a_tool_call_leaves_no_unanswered_call(home: Path) -> None:
    first = await start_sidecar(home)
    never = asyncio.Event()

    async def never_answer(params: dict) -> dict:
        await never.wait()
        return {}

    first.on_request("tool/call", never_answer)
    sid = await first.new_session(model=TOOL_THEN_HANG, tools=SLOW_TOOL)
    prompt = asyncio.ensure_future(first.prompt(sid, "use the tool"))
    await first.wait_update(lambda u: u["update"]["sessionUpdate"] == "tool_call")
    assert first._server is not None
    os.kill(first._server.pid, signal.SIGKILL)
    await first.stop()
    prompt.cancel()

    second = await start_sidecar(home)
    try:
        msgs = await history(second, sid)
        uses = [b["id"] for m in msgs for b in m["content"] if b["type"] == "tool_use"]
        results = [b for m in msgs for b in m["content"] if b["type"] == "tool_result"]
        assert len(uses) == 1
        assert [r["toolUseId"] for r in results] == uses
        assert results[0]["status"] == "cancelled"
    finally:
        await second.stop()


async def test_data_folder_and_database_are_private(home: Path) -> None:
    client = await start_sidecar(home)
    await client.new_session(model=HELLO)
    await client.stop()
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "threadline.db").stat().st_mode) == 0o600
