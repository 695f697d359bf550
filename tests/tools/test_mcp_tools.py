"""MCP tools against a real MCP stdio server (``mcp_echo_server.py``, built with the SDK).

Each test checks that every server process it started is gone at the end: closing,
a start timeout and a cancelled start must all leave nothing running.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.tools.fakes import (
    FakeEditor,
    echo_server_entry,
    make_ctx,
    remote_echo_server,
    remote_entry,
)
from threadline.tools.base import ToolOutcome
from threadline.tools.mcp import McpConnections, tool_name
from threadline.tools.mcp_config import McpRemoteSpec, McpServerSpec, parse_server
from threadline_protocol import methods as pm

pytestmark = pytest.mark.timeout(90)


def live_children() -> set[int]:
    """Processes whose parent is this one and that are not zombies (Linux /proc)."""
    me = str(os.getpid())
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            found.add(int(entry))
    return found


async def wait_until_gone(pids: set[int], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while pids & live_children():
        assert time.monotonic() < deadline, f"still running: {pids & live_children()}"
        await anyio.sleep(0.05)


def echo_tools(server: str) -> list[str]:
    """The session's names of ``mcp_echo_server.py``'s tools, sorted."""
    tools = ["add", "dotted_name", "echo", "fail", "sleep", "where"]
    return [f"{server}__{t}" for t in tools]


def text_of(outcome: ToolOutcome) -> str:
    return "".join(c.get("text", "") for c in outcome.content)


@pytest.fixture
def errlog(tmp_path: Path) -> Any:
    with open(tmp_path / "mcp-stderr.log", "w") as f:
        yield f


async def test_echo_server_tools_calls_and_clean_close(tmp_path: Path, errlog: Any) -> None:
    before = live_children()
    conns = McpConnections(cwd=str(tmp_path), errlog=errlog)
    began = time.monotonic()
    tools = await conns.start([echo_server_entry(ECHO_PREFIX="> ")], taken={"read_file"})
    took = time.monotonic() - began
    print(f"MCP echo server start: {took:.2f} s (host: {conns.start_times['echo']:.2f} s)")
    started = live_children() - before
    assert len(started) == 1
    assert conns.running == ["echo"] and conns.failures == {}
    by_name = {t.name: t for t in tools}
    assert sorted(by_name) == echo_tools("echo")
    echo = by_name["echo__echo"]
    assert (echo.kind, echo.needs_permission, echo.parallelizable) == ("read", False, True)
    add = by_name["echo__add"]
    assert (add.kind, add.needs_permission, add.parallelizable) == ("other", True, False)
    assert add.parameters["required"] == ["a", "b"]
    assert "MCP server 'echo'" in add.description
    assert add.title({}) == "add (echo)"

    ctx = make_ctx(tmp_path, FakeEditor())
    said = await echo.run({"text": "hi"}, ctx)
    assert said.content == [{"type": "text", "text": "> hi"}]  # env reached the server
    assert not said.is_error
    assert said.raw_output["structuredContent"] == {"result": "> hi"}
    assert text_of(await add.run({"a": 2, "b": 40}, ctx)) == "42"
    where = await by_name["echo__where"].run({}, ctx)
    assert text_of(where) == str(tmp_path)  # started in the session's cwd
    failed = await by_name["echo__fail"].run({"reason": "disk on fire"}, ctx)
    assert failed.is_error and "disk on fire" in text_of(failed)
    bad_args = await add.run({"a": "not a number"}, ctx)
    assert bad_args.is_error
    assert text_of(await by_name["echo__dotted_name"].run({}, ctx)) == "ok"

    # A call cut short by its caller (a timeout or an interrupt) leaves the connection usable.
    with anyio.move_on_after(0.5):
        await by_name["echo__sleep"].run({"seconds": 30}, ctx)
    assert text_of(await echo.run({"text": "still here"}, ctx)) == "> still here"

    # Starting the same server again does nothing: once per session.
    assert await conns.start([echo_server_entry()]) == []
    assert live_children() - before == started

    closing = time.monotonic()
    await conns.aclose()
    print(f"MCP echo server close: {time.monotonic() - closing:.2f} s")
    await wait_until_gone(started)
    after = await echo.run({"text": "x"}, ctx)
    assert after.is_error and text_of(after) == "MCP server 'echo' is not running"
    assert conns.running == [] and conns.tools() == []


async def test_hosts_in_a_task_group_and_failed_servers(tmp_path: Path, errlog: Any) -> None:
    before = live_children()
    servers = [
        echo_server_entry("one"),
        {"name": "missing", "command": str(tmp_path / "no-such-binary"), "args": [], "env": []},
        {"type": "ws", "name": "web", "url": "ws://127.0.0.1:9/mcp", "headers": []},
        {"name": "crashes", "command": sys.executable, "args": ["-c", "raise SystemExit(3)"]},
    ]
    async with anyio.create_task_group() as tg:
        conns = McpConnections(cwd=str(tmp_path), task_group=tg, errlog=errlog)
        tools = await conns.start(servers)
        assert {t.server for t in tools} == {"one"}
        assert conns.running == ["one"]
        assert set(conns.failures) == {"missing", "web", "crashes"}
        assert "no-such-binary" in conns.failures["missing"]
        assert "not supported" in conns.failures["web"]  # ACP has no websocket entries
        ctx = make_ctx(tmp_path, FakeEditor())
        one_echo = next(t for t in tools if t.name == "one__echo")
        assert text_of(await one_echo.run({"text": "tg"}, ctx)) == "tg"
        started = live_children() - before
        await conns.aclose()
    # The task group ended, so every host task finished, and their servers are gone.
    await wait_until_gone(started)
    assert live_children() - before == set()


async def test_a_server_that_never_answers_times_out_and_is_stopped(
    tmp_path: Path, errlog: Any
) -> None:
    before = live_children()
    silent = {
        "name": "silent",
        "command": sys.executable,
        "args": ["-c", "import time; time.sleep(60)"],
        "env": [],
    }
    conns = McpConnections(cwd=str(tmp_path), errlog=errlog, start_timeout=1.0)
    began = time.monotonic()
    assert await conns.start([silent]) == []
    assert time.monotonic() - began < 5
    assert conns.failures == {"silent": "did not start within 1 s"}
    await wait_until_gone(live_children() - before, seconds=15)
    await conns.aclose()


async def test_a_cancelled_start_leaves_no_server_behind(tmp_path: Path, errlog: Any) -> None:
    import mcp.client.stdio  # noqa: F401 - so the cancel lands after the spawn

    before = live_children()
    conns = McpConnections(cwd=str(tmp_path), errlog=errlog)
    with anyio.move_on_after(0.3) as scope:
        await conns.start([echo_server_entry()])
    assert scope.cancelled_caught
    spawned = live_children() - before
    assert spawned, "the server should have been spawned before the cancel"
    await wait_until_gone(spawned, seconds=15)
    assert conns.running == []
    await conns.aclose()


def test_server_specs_and_names() -> None:
    spec = parse_server(
        {"name": "fs", "command": "/bin/x", "args": ["-v"], "env": [{"name": "K", "value": "v"}]}
    )
    assert spec == McpServerSpec("fs", "/bin/x", ("-v",), (("K", "v"),))
    # The protocol models of session/new are accepted as they are.
    params = pm.NewSessionParams.model_validate(
        {
            "cwd": "/w",
            "mcpServers": [{"name": "fs", "command": "/bin/x", "args": ["-v"], "env": []}],
        }
    )
    assert parse_server(params.mcp_servers[0]) == McpServerSpec("fs", "/bin/x", ("-v",))
    remote = {
        "type": "sse",
        "name": "web",
        "url": "https://example.test/sse",
        "headers": [{"name": "Authorization", "value": "Bearer t"}, {"value": "no name"}],
    }
    clean = {**remote, "headers": remote["headers"][:1]}
    as_model = pm.NewSessionParams.model_validate({"cwd": "/w", "mcpServers": [clean]})
    for raw in [remote, as_model.mcp_servers[0]]:
        assert parse_server(raw) == McpRemoteSpec(
            "web", "https://example.test/sse", "sse", (("Authorization", "Bearer t"),)
        )
    http = parse_server({"type": "http", "name": "h", "url": "http://127.0.0.1:1/mcp"})
    assert http == McpRemoteSpec("h", "http://127.0.0.1:1/mcp", "http")
    for bad in [
        {"command": "/bin/x"},
        {"name": "n"},
        {"name": "n", "command": "x", "args": [1]},
        {"type": "http", "name": "n"},
        {"type": "sse", "name": "n", "url": "file:///etc/passwd"},
        {"type": "ws", "name": "n", "url": "ws://h"},
    ]:
        with pytest.raises(ValueError):
            parse_server(bad)
    assert tool_name("my server", "do.it", set()) == "my_server__do_it"
    assert tool_name("a", "b", {"a__b"}) == "a__b_2"
    assert tool_name("a", "b", {"a__b", "a__b_2"}) == "a__b_3"
    long = tool_name("s" * 40, "t" * 40, set())
    assert len(long) == 64
    assert len(tool_name("s" * 40, "t" * 40, {long})) == 64


async def test_concurrent_starts_spawn_once_and_close_during_start(
    tmp_path: Path, errlog: Any
) -> None:
    import mcp.client.stdio  # noqa: F401 - so the close lands while the server starts

    before = live_children()
    conns = McpConnections(cwd=str(tmp_path), errlog=errlog)
    counts: list[int] = []

    async def start() -> None:
        counts.append(len(await conns.start([echo_server_entry()])))

    async with anyio.create_task_group() as tg:
        tg.start_soon(start)
        tg.start_soon(start)
    assert sorted(counts) == [0, 6]
    assert len(live_children() - before) == 1
    await conns.aclose()

    closing = McpConnections(cwd=str(tmp_path), errlog=errlog)
    async with anyio.create_task_group() as tg:
        tg.start_soon(start_quietly, closing)
        await anyio.sleep(0.3)
        await closing.aclose()
    assert closing.running == [] and closing.tools() == []
    await wait_until_gone(live_children() - before, seconds=15)


async def start_quietly(conns: McpConnections) -> None:
    assert await conns.start([echo_server_entry()]) == []


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_remote_server_tools_calls_headers_and_failures(
    transport: str, tmp_path: Path, errlog: Any
) -> None:
    """A real SDK server over streamable HTTP or SSE on loopback: the entry's headers
    reach it (it answers 401 without them), its tools are listed and called, and the
    servers that cannot be reached are reported without stopping the others."""
    token = "Bearer s3cret"
    with remote_echo_server(transport, tmp_path, require=f"Authorization={token}") as url:
        conns = McpConnections(cwd=str(tmp_path), errlog=errlog, start_timeout=30)
        down = url.replace(url.split("/")[2], f"127.0.0.1:{closed_port()}")
        tools = await conns.start(
            [
                remote_entry(url, transport, "web", Authorization=token),
                remote_entry(url, transport, "nokey"),
                remote_entry(down, transport, "down", Authorization=token),
                {"type": transport, "name": "nourl", "headers": []},
            ]
        )
        assert conns.running == ["web"]
        assert set(conns.failures) == {"nokey", "down", "nourl"}
        assert "401" in conns.failures["nokey"], conns.failures
        assert "http(s) url" in conns.failures["nourl"]
        by_name = {t.name: t for t in tools}
        assert sorted(by_name) == echo_tools("web")
        assert (by_name["web__echo"].kind, by_name["web__add"].needs_permission) == (
            "read",
            True,
        )
        ctx = make_ctx(tmp_path, FakeEditor())
        echo = by_name["web__echo"]
        assert (await echo.run({"text": "over the wire"}, ctx)).content == [
            {"type": "text", "text": "over the wire"}
        ]
        assert text_of(await by_name["web__add"].run({"a": 2, "b": 40}, ctx)) == "42"
        failed = await by_name["web__fail"].run({"reason": "disk on fire"}, ctx)
        assert failed.is_error and "disk on fire" in text_of(failed)
        with anyio.move_on_after(0.5):
            await by_name["web__sleep"].run({"seconds": 30}, ctx)
        assert text_of(await echo.run({"text": "still here"}, ctx)) == "still here"
        with anyio.fail_after(15):
            await conns.aclose()
        after = await echo.run({"text": "x"}, ctx)
        assert after.is_error and text_of(after) == "MCP server 'web' is not running"
        assert conns.running == [] and conns.tools() == []
