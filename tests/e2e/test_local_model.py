"""End to end with the real embedded model (SmolLM2-135M on llama.cpp, CPU).

Answers are short (``maxTokens``) so the file stays within a couple of minutes.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bench.toolprompts import EDITOR_TOOLS
from tests.support import SidecarClient, sidecar_env, start_sidecar

pytestmark = pytest.mark.model

WEATHER = EDITOR_TOOLS[0]  # the tool-choice figure's get_weather, as an editor offers it


async def history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


def answer_text(message: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in message["content"] if b["type"] == "text")


async def test_stream_usage_restart_and_history(home: Path) -> None:
    client = await start_sidecar(home)
    try:
        sid = await client.new_session(maxTokens=48, builtinTools=False)
        result = await client.prompt(sid, "Name three colours.", timeout=120)
        assert result["stopReason"] in ("end_turn", "max_tokens")
        assert result["usage"]["inputTokens"] > 0 and result["usage"]["outputTokens"] > 0
        msgs = await history(client, sid)
        streamed = client.text_of(sid)
        assert streamed.strip(), "the model answered"
        assert answer_text(msgs[-1]) == streamed
        assert msgs[-1]["model"] == "local:smollm2-135m"
        usage = [
            u["update"] for u in client.updates if u["update"]["sessionUpdate"] == "usage_update"
        ]
        assert usage and usage[-1]["size"] >= 2048
    finally:
        await client.stop()
    again = await start_sidecar(home)
    try:
        assert await history(again, sid) == msgs
        assert (await again.prompt(sid, "And one more?", timeout=120))["stopReason"] in (
            "end_turn",
            "max_tokens",
        )
    finally:
        await again.stop()


async def test_interrupt_while_the_model_generates(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(maxTokens=400, builtinTools=False)
    prompt = asyncio.ensure_future(
        sidecar.prompt(sid, "Write a long story about a dragon and a knight.", timeout=120)
    )
    await sidecar.wait_update(
        lambda u: u["update"]["sessionUpdate"] == "agent_message_chunk", timeout=120
    )
    await asyncio.sleep(0.3)
    t0 = time.monotonic()
    assert (await sidecar.call("session/interrupt", {"sessionId": sid}))["interrupted"] is True
    elapsed = time.monotonic() - t0
    assert (await prompt)["stopReason"] == "cancelled"
    assert elapsed < 1.0, f"interrupt took {elapsed:.2f} s"
    last = (await history(sidecar, sid))[-1]
    assert last["truncated"] is True
    assert answer_text(last) == sidecar.text_of(sid)


async def test_weather_tool_round_trip(sidecar: SidecarClient) -> None:
    calls: list[dict[str, Any]] = []

    async def weather(params: dict[str, Any]) -> dict[str, Any]:
        calls.append(params)
        return {"content": [{"type": "text", "text": "Sunny, 21 degrees Celsius."}]}

    sidecar.on_request("tool/call", weather)
    sid = await sidecar.new_session(tools=[WEATHER], builtinTools=False, maxTokens=64)
    result = await sidecar.prompt(sid, "What is the weather in Paris?", timeout=180)
    assert result["stopReason"] in ("end_turn", "max_turn_requests", "max_tokens")
    assert calls, "the model made a structured tool call"
    assert "paris" in str(calls[0]["arguments"].get("city", "")).lower()
    msgs = await history(sidecar, sid)
    uses = [b["id"] for m in msgs for b in m["content"] if b["type"] == "tool_use"]
    results = [b["toolUseId"] for m in msgs for b in m["content"] if b["type"] == "tool_result"]
    assert sorted(uses) == sorted(results)


async def test_compaction_with_the_real_model(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(maxTokens=120, builtinTools=False)
    for question in ("Describe cats.", "Describe dogs.", "Describe birds.", "Describe cows."):
        await sidecar.prompt(sid, question, timeout=120)
    result = await sidecar.call("session/compact", {"sessionId": sid, "keepTurns": 1}, timeout=180)
    assert result["summary"].strip()
    assert result["tokensAfter"] < result["tokensBefore"]
    assert (await sidecar.prompt(sid, "And a fish?", timeout=120))["stopReason"] in (
        "end_turn",
        "max_tokens",
    )


def test_threadline_ask_streams_an_answer(home: Path) -> None:
    env = sidecar_env(home)
    exe = Path(sys.executable).with_name("threadline")
    done = subprocess.run(
        [str(exe), "ask", "Say hello in one short sentence."],
        env={**env, "THREADLINE_MODEL": ""},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    assert "session: sess_" in done.stderr
    sid = done.stderr.split("session: ")[1].split()[0]
    shown = subprocess.run(
        [str(exe), "history", sid], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() in shown.stdout
    assert os.path.exists(home / "threadline.db")
