"""Client faults: an editor that goes away mid-turn, one that stops reading, and one
that never answers the server's requests."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.figures import record
from tests.reliability.invariants import structural_problems, text_of
from tests.reliability.wire import cpu_ticks, pid_alive, rss_kib
from tests.reliability.zygote import Zygote
from tests.support import SERVER_COMMAND, RawSidecar, SidecarClient, scripted, sidecar_env
from tests.tools.fakes import echo_server_entry

QUICK = scripted([{"text": "fine"}])
CLIENT_TOOL = {"name": "client_tool", "inputSchema": {"type": "object"}, "timeout": 600}
GUARDED_TOOL = {**CLIENT_TOOL, "name": "guarded_tool", "needsApproval": True}


def children_of(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found |= {int(p) for p in text}
    return found


class Driver:
    """Raw lines-framed traffic with a sidecar, answering server requests as told."""

    def __init__(self, raw: RawSidecar) -> None:
        self.raw = raw
        self.chunks: list[str] = []
        self.updates: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.answers: dict[Any, dict[str, Any]] = {}
        self.allow_permissions = False

    async def call(self, msg_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await self.send_request(msg_id, method, params)
        await self.until(lambda: msg_id in self.answers)
        return self.answers[msg_id]

    async def send_request(self, msg_id: Any, method: str, params: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        await self.raw.send(message, framing="lines")

    async def until(self, done: Any, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            msg = await self.raw.read(max(0.01, deadline - time.monotonic()))
            await self.file(msg)

    async def file(self, msg: dict[str, Any]) -> None:
        if "method" not in msg:
            self.answers[msg.get("id")] = msg
        elif "id" in msg:
            self.requests.append(msg)
            if msg["method"] == "session/request_permission" and self.allow_permissions:
                outcome = {"outcome": "selected", "optionId": "allow_once"}
                reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": outcome}}
                await self.raw.send(reply, framing="lines")
        elif msg["method"] == "session/update":
            self.updates.append(msg["params"])
            update = msg["params"]["update"]
            if update["sessionUpdate"] == "agent_message_chunk":
                self.chunks.append(update["content"]["text"])

    def saw(self, kind: str, **fields: Any) -> bool:
        return any(
            u["update"]["sessionUpdate"] == kind
            and all(u["update"].get(k) == v for k, v in fields.items())
            for u in self.updates
        )


SCENARIOS: dict[str, dict[str, Any]] = {
    "streaming": {
        "model": scripted([{"text": "half "}, {"text": "an answer"}, {"hang": True}]),
        "ready": lambda d: "".join(d.chunks).endswith("an answer"),
    },
    "client_tool_call": {
        "model": scripted([{"text": "calling "}, {"tool_call": {"name": "client_tool"}}]),
        "ready": lambda d: any(r["method"] == "tool/call" for r in d.requests),
    },
    "permission_wait": {
        "model": scripted([{"tool_call": {"name": "guarded_tool", "arguments": {}}}]),
        "ready": lambda d: any(r["method"] == "session/request_permission" for r in d.requests),
    },
    "mcp_tool_running": {
        "model": scripted([{"tool_call": {"name": "echo__sleep", "arguments": {"seconds": 60}}}]),
        "ready": lambda d: d.saw("tool_call_update", status="in_progress"),
        "mcp": True,
    },
}


@pytest.mark.timeout(90)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_stdin_closed_mid_turn_cancels_it_durably_and_exits_0_within_2s(
    scenario: str, home: Path, tmp_path: Path, zygote: Zygote
) -> None:
    spec = SCENARIOS[scenario]
    raw = await RawSidecar.start(home)
    driver = Driver(raw)
    driver.allow_permissions = bool(spec.get("mcp"))
    await driver.call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    options = {"model": spec["model"], "tools": [CLIENT_TOOL, GUARDED_TOOL], "builtinTools": False}
    servers = [echo_server_entry()] if spec.get("mcp") else []
    new = await driver.call(
        2,
        "session/new",
        {"cwd": str(tmp_path), "mcpServers": servers, "_meta": {"threadline": options}},
    )
    sid = new["result"]["sessionId"]
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
    await driver.send_request(3, "session/prompt", prompt)
    await driver.until(lambda: spec["ready"](driver))
    tools = children_of(raw.proc.pid)
    assert bool(tools) == bool(spec.get("mcp")), f"child processes: {tools}"

    assert raw.proc.stdin is not None
    raw.proc.stdin.close()
    closed = time.monotonic()
    code = await asyncio.wait_for(raw.proc.wait(), 10)
    took = time.monotonic() - closed
    with pytest.raises((EOFError, TimeoutError)):  # read what it wrote before exiting
        await driver.until(lambda: False, timeout=2)
    await raw.close()
    assert code == 0, raw.stderr.decode()[-3000:]
    assert took <= 2.0, f"exited {took:.2f} s after stdin closed"
    assert not any(pid_alive(p) for p in tools), "an MCP server outlived the sidecar"
    assert driver.answers.get(3, {}).get("result", {}).get("stopReason") == "cancelled"

    _pid, peer = await zygote.peer(home, tmp_path / "verify.log")
    try:
        await peer.call("initialize", {"protocolVersion": 1})
        messages = (await peer.call("session/history", {"sessionId": sid}))["messages"]
        assert structural_problems(messages) == []
        answer = next(m for m in messages if m["role"] == "assistant")
        assert text_of(answer) == "".join(driver.chunks)
        if scenario == "streaming":
            assert answer["truncated"] is True
        else:
            results = [b for m in messages for b in m["content"] if b["type"] == "tool_result"]
            assert [r["status"] for r in results] == ["cancelled"]
        await peer.call(
            "session/set_config_option", {"sessionId": sid, "configId": "model", "value": QUICK}
        )
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "back again"}]}
        assert (await peer.call("session/prompt", prompt))["stopReason"] == "end_turn"
    finally:
        await peer.close()
    record("client_faults", case=f"stdin closed: {scenario}", exit_seconds=round(took, 2))


DELTAS = 200_000
YIELD_EVERY = 16
"""The scripted model hands the turn loop 16 deltas at a time: 12,500 bursts, each
announced separately, which is what the outbox must coalesce while nobody reads."""


@pytest.mark.timeout(120)
async def test_a_client_that_stops_reading_keeps_memory_bounded_and_loses_nothing(
    home: Path,
) -> None:
    # A plain pipe nobody reads (asyncio's subprocess pipes are drained eagerly).
    proc = await asyncio.to_thread(
        subprocess.Popen,
        SERVER_COMMAND,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=sidecar_env(home),
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def send(msg: dict[str, Any]) -> None:
        stdin.write(json.dumps(msg).encode() + b"\n")
        stdin.flush()

    def read_until(msg_id: int, seen: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        while True:
            msg = json.loads(stdout.readline())
            if "method" not in msg and msg.get("id") == msg_id:
                return msg
            if seen is not None:
                seen.append(msg)

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        await asyncio.to_thread(read_until, 1)
        model = scripted(
            [{"repeat": {"text": "tok ", "count": DELTAS, "yield_every": YIELD_EVERY}}]
        )
        params = {"cwd": "/tmp", "mcpServers": [], "_meta": {"threadline": {"model": model}}}
        send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": params})
        sid = (await asyncio.to_thread(read_until, 2))["result"]["sessionId"]
        await asyncio.sleep(0.3)
        baseline = rss_kib(proc.pid)

        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt})
        peak, idle, ticks = baseline, 0, cpu_ticks(proc.pid)
        started = time.monotonic()
        while idle < 10:  # until the server has done all it can (1 s without CPU)
            await asyncio.sleep(0.1)
            peak = max(peak, rss_kib(proc.pid))
            now = cpu_ticks(proc.pid)
            idle, ticks = (idle + 1, ticks) if now == ticks else (0, now)
            assert time.monotonic() - started < 90, "the turn did not settle"
        stalled_for = time.monotonic() - started

        seen: list[dict[str, Any]] = []
        answer = await asyncio.to_thread(read_until, 3, seen)
        assert answer["result"]["stopReason"] == "end_turn"
        chunks = [
            m["params"]["update"]["content"]["text"]
            for m in seen
            if m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        assert "".join(chunks) == "tok " * DELTAS, "text lost, duplicated or reordered"
        send({"jsonrpc": "2.0", "id": 4, "method": "session/history", "params": {"sessionId": sid}})
        stored = (await asyncio.to_thread(read_until, 4))["result"]["messages"]
        assert text_of(stored[-1]) == "tok " * DELTAS
    finally:
        stdin.close()
        proc.wait(10)
    growth_mib = (peak - baseline) / 1024
    bursts = DELTAS // YIELD_EVERY
    record(
        "client_faults",
        case="client stops reading during a 200k-delta answer",
        rss_baseline_mib=round(baseline / 1024, 1),
        rss_peak_mib=round(peak / 1024, 1),
        rss_growth_mib=round(growth_mib, 1),
        text_mib=round(len("tok ") * DELTAS / 2**20, 2),
        announced_bursts=bursts,
        notifications_received=len(chunks),
        seconds_until_settled=round(stalled_for, 1),
    )
    assert len(chunks) < bursts // 20, f"{len(chunks)} notifications for {bursts} bursts"
    assert growth_mib < 64, f"RSS grew {growth_mib:.0f} MiB for {DELTAS} deltas"


UNANSWERED = {
    "permission": ("guarded_tool", {}, "session/request_permission"),
    "tool_call": ("client_tool", {}, "tool/call"),
    "fs_read": ("read_file", {"path": "notes.txt"}, "fs/read_text_file"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("what", "how"),
    [
        ("permission", "session/interrupt"),
        ("permission", "session/cancel"),
        ("tool_call", "session/cancel"),
        ("fs_read", "session/interrupt"),
    ],
)
async def test_a_client_that_never_answers_can_still_interrupt_the_turn(
    what: str, how: str, sidecar: SidecarClient, tmp_path: Path
) -> None:
    tool, arguments, method = UNANSWERED[what]
    never = asyncio.Event()

    async def hang(params: dict[str, Any]) -> Any:
        await never.wait()

    sidecar.on_request(method, hang)
    if what == "fs_read":  # the editor offers reads, so read_file asks it
        await sidecar.call(
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}},
        )
    (tmp_path / "notes.txt").write_text("notes\n")
    model = scripted([{"tool_call": {"name": tool, "arguments": arguments}}], [{"text": "x"}])
    sid = await sidecar.new_session(
        cwd=str(tmp_path), model=model, tools=[CLIENT_TOOL, GUARDED_TOOL]
    )
    turn = asyncio.ensure_future(sidecar.prompt(sid, "go"))
    deadline = time.monotonic() + 20
    while not any(m == method for m, _ in sidecar.server_requests):
        assert time.monotonic() < deadline, f"no {method} request"
        await asyncio.sleep(0.02)
    if how == "session/interrupt":
        stopped = await sidecar.call("session/interrupt", {"sessionId": sid}, timeout=5)
        assert stopped["interrupted"] is True
    else:
        sidecar.notify("session/cancel", {"sessionId": sid})
    assert (await asyncio.wait_for(turn, 5))["stopReason"] == "cancelled"
    messages = (await sidecar.call("session/history", {"sessionId": sid}))["messages"]
    assert structural_problems(messages) == []
    results = [b for m in messages for b in m["content"] if b["type"] == "tool_result"]
    assert [r["status"] for r in results] == ["cancelled"]
    assert (await sidecar.call("session/interrupt", {"sessionId": sid}))["interrupted"] is False
