"""Load: 100 sessions x 20 turns at once through one sidecar, nothing lost, memory bounded.

Every session runs its turns back to back, all sessions at the same time. One in
five also calls a client tool every turn (answered by this client), so tool calls,
results and permissions-free client requests interleave with plain answers. At the
end every history is checked: the right number of messages in the right order, each
answer's text equal to the prompt it echoes and to what was streamed, and no errors
anywhere. The sidecar's RSS is sampled throughout.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest

from tests.reliability.figures import record
from tests.reliability.invariants import structural_problems, text_of
from tests.reliability.wire import rss_kib
from tests.support import SidecarClient, scripted

SESSIONS = int(os.environ.get("THREADLINE_LOAD_SESSIONS", "100"))
TURNS = int(os.environ.get("THREADLINE_LOAD_TURNS", "20"))
TOOL_EVERY = 5
TOOL = {"name": "lookup", "inputSchema": {"type": "object"}}
WITH_TOOL = scripted(
    [{"text": "looking up "}, {"tool_call": {"name": "lookup", "arguments": {"q": 1}}}],
    [{"echo": True}],
)


@pytest.mark.timeout(300)
async def test_100_sessions_x_20_turns_in_parallel(sidecar: SidecarClient) -> None:
    async def lookup(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "found"}]}

    sidecar.on_request("tool/call", lookup)
    assert sidecar._server is not None
    pid = sidecar._server.pid
    baseline = rss_kib(pid)
    samples: list[int] = []
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set():
            samples.append(rss_kib(pid))
            await asyncio.sleep(0.2)

    sids: list[str] = []
    for i in range(SESSIONS):
        tools = i % TOOL_EVERY == 0
        sids.append(
            await sidecar.new_session(
                model=WITH_TOOL if tools else "scripted:echo",
                tools=[TOOL] if tools else [],
                builtinTools=False,
            )
        )

    errors: list[str] = []

    async def run(i: int, sid: str) -> None:
        for turn in range(TURNS):
            try:
                result = await sidecar.prompt(sid, f"session {i} turn {turn}", timeout=120)
                if result["stopReason"] != "end_turn":
                    errors.append(f"{sid} turn {turn}: {result['stopReason']}")
            except Exception as exc:
                errors.append(f"{sid} turn {turn}: {exc!r}")

    sampler = asyncio.ensure_future(sample())
    started = time.monotonic()
    await asyncio.gather(*(run(i, sid) for i, sid in enumerate(sids)))
    took = time.monotonic() - started
    done.set()
    await sampler
    after = rss_kib(pid)
    assert errors == [], errors[:10]

    streamed: dict[str, str] = {}
    for u in sidecar.updates:
        if u["update"]["sessionUpdate"] == "agent_message_chunk":
            mid = u["update"]["messageId"]
            streamed[mid] = streamed.get(mid, "") + u["update"]["content"]["text"]
    messages_total = 0
    for i, sid in enumerate(sids):
        history = (await sidecar.call("session/history", {"sessionId": sid}))["messages"]
        messages_total += len(history)
        tools = i % TOOL_EVERY == 0
        per_turn = ["user", "assistant", "tool", "assistant"] if tools else ["user", "assistant"]
        assert [m["role"] for m in history] == per_turn * TURNS, f"{sid}: lost or extra messages"
        assert structural_problems(history) == [], sid
        answers = [m for m in history if m["role"] == "assistant" and text_of(m) != "looking up "]
        for turn, answer in enumerate(answers):
            want = " ".join(f"session {i} turn {turn}".split(" ")) + " "
            assert text_of(answer) == want, f"{sid} turn {turn}: {text_of(answer)!r}"
        for m in history:
            if m["role"] == "assistant":
                assert streamed.get(m["messageId"]) == text_of(m), f"{sid}: stream != store"
    peak = max(samples, default=baseline)
    record(
        "load",
        sessions=SESSIONS,
        turns_per_session=TURNS,
        turns=SESSIONS * TURNS,
        tool_calls=(SESSIONS // TOOL_EVERY) * TURNS,
        messages_stored=messages_total,
        seconds=round(took, 1),
        turns_per_second=round(SESSIONS * TURNS / took, 1),
        rss_baseline_mib=round(baseline / 1024, 1),
        rss_peak_mib=round(peak / 1024, 1),
        rss_after_mib=round(after / 1024, 1),
    )
    assert peak - baseline < 64 * 1024, f"RSS grew {(peak - baseline) // 1024} MiB"
