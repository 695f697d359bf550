"""The agent's work over the wire, with real ``threadline serve`` processes and the
scripted model: an edit shown as a diff from the first ``tool_call`` through the
permission request, the result, the history and a replay after a restart; a command's
output streamed while it runs, in the sidecar and in the client's terminal; the plan;
and a sidecar killed mid-command leaving no process and a cancelled call."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.support import SidecarClient, scripted, start_sidecar
from tests.tools.test_run_command import alive, gone, marker

pytestmark = pytest.mark.timeout(120)

SOURCE = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments}}


def updates_of(client: SidecarClient, sid: str, kind: str) -> list[dict[str, Any]]:
    return [
        u["update"]
        for u in client.updates
        if u["sessionId"] == sid and u["update"]["sessionUpdate"] == kind
    ]


async def history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


def blocks(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [b for m in messages for b in m["content"] if b["type"] == kind]


def allow(client: SidecarClient, option: str = "allow_once") -> list[dict[str, Any]]:
    asked: list[dict[str, Any]] = []

    async def permission(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["toolCall"])
        return {"outcome": {"outcome": "selected", "optionId": option}}

    client.on_request("session/request_permission", permission)
    return asked


async def replayed(home: Path, sid: str, cwd: Path) -> tuple[SidecarClient, list[dict[str, Any]]]:
    """A second sidecar's ``session/load`` of the session: the updates it replays."""
    other = await start_sidecar(home)
    await other.call("session/load", {"sessionId": sid, "cwd": str(cwd), "mcpServers": []})
    return other, [u["update"] for u in other.updates if u["sessionId"] == sid]


async def test_an_edit_is_a_diff_everywhere_it_is_shown(
    sidecar: SidecarClient, home: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text(SOURCE)
    asked = allow(sidecar)
    edit = call("edit_file", path="calc.py", edits=[{"oldText": "a - b", "newText": "a + b"}])
    model = scripted([edit], [{"text": "Fixed."}])
    sid = await sidecar.new_session(cwd=str(ws), model=model)
    result = await sidecar.prompt(sid, "fix add in calc.py")
    assert result["stopReason"] == "end_turn"
    assert (ws / "calc.py").read_text() == FIXED
    diff = {
        "type": "diff",
        "path": str(ws / "calc.py"),
        "oldText": SOURCE,
        "newText": FIXED,
    }
    started = updates_of(sidecar, sid, "tool_call")
    assert [u["status"] for u in started] == ["pending"]
    assert started[0]["content"] == [diff] and started[0]["kind"] == "edit"
    assert asked[0]["content"] == [diff]
    final = [
        u for u in updates_of(sidecar, sid, "tool_call_update") if u.get("status") == "completed"
    ]
    assert final[0]["content"][0] == diff
    assert final[0]["content"][1]["content"]["text"].startswith("Edited calc.py (-1 +1 lines)")
    messages = await history(sidecar, sid)
    assert blocks(messages, "tool_use")[0]["content"] == [diff]
    assert blocks(messages, "tool_result")[0]["display"] == [diff]
    await sidecar.stop()
    other, replay = await replayed(home, sid, ws)
    try:
        assert [u for u in replay if u["sessionUpdate"] == "tool_call"] == started
        assert [u for u in replay if u["sessionUpdate"] == "tool_call_update"] == final
    finally:
        await other.stop()


async def test_an_edit_that_does_not_apply_writes_nothing_and_says_where_to_look(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    (tmp_path / "calc.py").write_text(SOURCE)
    asked = allow(sidecar)
    bad = call("edit_file", path="calc.py", edits=[{"oldText": "return a-b", "newText": "x"}])
    sid = await sidecar.new_session(cwd=str(tmp_path), model=scripted([bad], [{"text": "ok"}]))
    await sidecar.prompt(sid, "fix it")
    assert (tmp_path / "calc.py").read_text() == SOURCE
    started = updates_of(sidecar, sid, "tool_call")[0]
    assert "content" not in started  # nothing to show: the edit would fail
    assert "content" not in asked[0]
    result = blocks(await history(sidecar, sid), "tool_result")[0]
    assert result["isError"] and result["status"] == "failed"
    text = result["content"][0]["text"]
    assert "oldText was not found" in text and "2|     return a - b" in text


async def test_a_commands_output_streams_into_its_tool_call(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    asked = allow(sidecar)
    command = "echo one; sleep 0.8; echo two; exit 2"
    model = scripted([call("run_command", command=command)], [{"text": "It failed."}])
    sid = await sidecar.new_session(cwd=str(tmp_path), model=model)
    await sidecar.prompt(sid, "run the script")
    assert asked[0]["kind"] == "execute" and asked[0]["title"] == f"Run `{command}`"
    assert asked[0]["locations"] == [{"path": str(tmp_path)}]
    progress = [
        u["content"][0]["content"]["text"]
        for u in updates_of(sidecar, sid, "tool_call_update")
        if u.get("status") == "in_progress" and u.get("content")
    ]
    assert progress[0] == "one\n" and progress[-1] == "one\ntwo\n"
    result = blocks(await history(sidecar, sid), "tool_result")[0]
    assert result["content"][0]["text"] == f"$ {command}\none\ntwo\n\n[exit code 2]"
    assert result["rawOutput"]["exitCode"] == 2 and result["rawOutput"]["ranIn"] == "sidecar"


async def test_a_command_runs_in_the_clients_terminal_when_it_has_one(
    home: Path, tmp_path: Path
) -> None:
    client = await start_sidecar(home, initialize=False)
    terminals: dict[str, asyncio.subprocess.Process] = {}
    logs: dict[str, Path] = {}

    async def create(params: dict[str, Any]) -> dict[str, Any]:
        tid = f"t{len(terminals) + 1}"
        logs[tid] = tmp_path / f"{tid}.log"
        with logs[tid].open("wb") as out:
            terminals[tid] = await asyncio.create_subprocess_exec(
                params["command"],
                *params["args"],
                cwd=params["cwd"],
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        return {"terminalId": tid}

    async def wait(params: dict[str, Any]) -> dict[str, Any]:
        code = await terminals[params["terminalId"]].wait()
        return {"exitCode": code, "signal": None}

    async def output(params: dict[str, Any]) -> dict[str, Any]:
        code = terminals[params["terminalId"]].returncode
        return {
            "output": logs[params["terminalId"]].read_text(),
            "truncated": False,
            "exitStatus": {"exitCode": code, "signal": None},
        }

    async def release(params: dict[str, Any]) -> dict[str, Any]:
        return {}

    for method, handler in [
        ("terminal/create", create),
        ("terminal/wait_for_exit", wait),
        ("terminal/output", output),
        ("terminal/release", release),
    ]:
        client.on_request(method, handler)
    allow(client)
    try:
        caps = {"terminal": True, "session": {"compaction": {}}}
        await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        model = scripted([call("run_command", command="echo in-terminal")], [{"text": "done"}])
        sid = await client.new_session(cwd=str(tmp_path), model=model)
        await client.prompt(sid, "run it")
        methods = [m for m, _ in client.server_requests]
        assert methods == [
            "session/request_permission",
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release",
        ]
        shown = [u.get("content") for u in updates_of(client, sid, "tool_call_update")]
        assert [{"type": "terminal", "terminalId": "t1"}] in shown
        final = updates_of(client, sid, "tool_call_update")[-1]
        assert final["content"][0] == {"type": "terminal", "terminalId": "t1"}
        result = blocks(await history(client, sid), "tool_result")[0]
        assert "in-terminal" in result["content"][0]["text"]
        assert result["rawOutput"]["ranIn"] == "terminal"
    finally:
        await client.stop()


async def test_the_plan_is_shown_stored_replayed_and_forked(
    sidecar: SidecarClient, home: Path, tmp_path: Path
) -> None:
    entries = [
        {"content": "Run the failing test", "priority": "high", "status": "completed"},
        {"content": "Fix add()", "priority": "medium", "status": "in_progress"},
    ]
    model = scripted([call("update_plan", entries=entries)], [{"text": "Planned."}])
    sid = await sidecar.new_session(cwd=str(tmp_path), model=model)
    await sidecar.prompt(sid, "make a plan")
    plans = updates_of(sidecar, sid, "plan")
    assert plans == [{"sessionUpdate": "plan", "entries": entries}]
    assert blocks(await history(sidecar, sid), "tool_result")[0]["plan"] == entries
    child = (await sidecar.call("session/fork", {"sessionId": sid}))["sessionId"]
    await sidecar.stop()
    for session in (sid, child):
        other, replay = await replayed(home, session, tmp_path)
        try:
            assert [u for u in replay if u["sessionUpdate"] == "plan"] == plans
        finally:
            await other.stop()


def test_a_sidecar_killed_mid_command_leaves_no_process_and_a_cancelled_call(
    home: Path, tmp_path: Path
) -> None:
    m = marker()

    async def first() -> str:
        client = await start_sidecar(home)
        allow(client)
        model = scripted([call("run_command", command=f"echo go; sleep {m} & sleep {m}")])
        sid = await client.new_session(cwd=str(tmp_path), model=model)
        task = asyncio.ensure_future(client.prompt(sid, "run it"))
        await client.wait_update(
            lambda u: (
                u["update"].get("status") == "in_progress" and bool(u["update"].get("content"))
            )
        )
        assert len(alive(m)) >= 2
        server = client._server  # the sidecar's process: killed as a crash would
        assert server is not None
        os.kill(server.pid, signal.SIGKILL)
        await server.wait()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.stop()
        return sid

    sid = asyncio.run(first())
    assert gone(m, within=5), f"left running: {alive(m)}"

    async def second() -> None:
        client = await start_sidecar(home)
        try:
            result = blocks(await history(client, sid), "tool_result")
            assert [r["status"] for r in result] == ["cancelled"]
        finally:
            await client.stop()

    asyncio.run(second())
