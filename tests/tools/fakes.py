"""Test doubles for the client side of the tools, and workspace fixtures.

:class:`FakeEditor` implements the engine's ``ClientLink`` protocol the way an ACP
editor answers: ``fs/read_text_file`` serves open (unsaved) buffers before the disk
and honours ``line``/``limit``, ``fs/write_text_file`` writes the disk, and
``session/request_permission`` answers with a chosen option, and ``terminal/*``
(with ``terminal=True``) runs real child processes the way an editor's terminal does.
It records every request so tests can check what reached the client, and what did not.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from pydantic import BaseModel

from tests.support import stop_process
from threadline.engine.events import Event
from threadline.rpc.projection import Projection
from threadline.tools.base import ToolContext
from threadline_protocol import methods as pm
from threadline_protocol import work as pw

ECHO_SERVER = str(Path(__file__).with_name("mcp_echo_server.py"))


def echo_server_entry(name: str = "echo", **env: str) -> dict[str, Any]:
    """An ACP ``mcpServers`` stdio entry for the test MCP server."""
    return {
        "name": name,
        "command": sys.executable,
        "args": [ECHO_SERVER],
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }


def remote_entry(url: str, transport: str, name: str = "web", **headers: str) -> dict[str, Any]:
    """An ACP ``mcpServers`` ``http`` or ``sse`` entry."""
    pairs = [{"name": k, "value": v} for k, v in headers.items()]
    return {"type": transport, "name": name, "url": url, "headers": pairs}


@contextmanager
def remote_echo_server(transport: str, folder: Path, require: str | None = None) -> Iterator[str]:
    """The test MCP server over streamable HTTP (``http``) or SSE (``sse``) on a free
    loopback port, as a process of its own; yields its endpoint URL and stops it."""
    port_file = folder / f"mcp-{transport}-{time.monotonic_ns()}.port"
    command = [sys.executable, ECHO_SERVER, "--transport", transport, "--port-file", str(port_file)]
    if require:
        command += ["--require", require]
    with open(folder / f"mcp-{transport}.log", "a") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert proc.poll() is None, f"the {transport} MCP server exited ({proc.returncode})"
            assert time.monotonic() < deadline, f"the {transport} MCP server did not start"
            time.sleep(0.05)
        path = "/sse" if transport == "sse" else "/mcp"
        yield f"http://127.0.0.1:{port_file.read_text()}{path}"
    finally:
        stop_process(proc)


class FakeEditor:
    def __init__(self, *, read: bool = False, write: bool = False, terminal: bool = False) -> None:
        self.caps: dict[str, Any] = {
            "fs": {"readTextFile": read, "writeTextFile": write},
            "terminal": terminal,
        }
        self.terminals: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
        self.released: list[str] = []
        self.buffers: dict[str, str] = {}
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.updates: list[tuple[str, dict[str, Any]]] = []
        self.permission = "allow_once"
        self.ignore_limit = False

    @property
    def projection(self) -> Projection:
        return Projection.for_client(self.caps)

    def announce(self, session_id: str, event: Event) -> None:
        self.updates.extend((session_id, u) for u in self.projection.updates(event))

    def notify_updates(self, session_id: str, updates: Sequence[dict[str, Any]]) -> None:
        self.updates.extend((session_id, update) for update in updates)

    def notify_updates_json(self, session_id: str, updates: Sequence[bytes]) -> None:
        self.notify_updates(session_id, [json.loads(u) for u in updates])

    def client_capabilities(self) -> dict[str, Any]:
        return self.caps

    def methods(self) -> list[str]:
        return [m for m, _ in self.requests]

    async def request_permission(
        self, params: pm.RequestPermissionParams
    ) -> pm.RequestPermissionResult:
        answer = await self.request("session/request_permission", params)
        return pm.RequestPermissionResult.model_validate(answer)

    async def read_text_file(self, params: pm.ReadTextFileParams) -> pm.ReadTextFileResult:
        return pm.ReadTextFileResult.model_validate(await self.request("fs/read_text_file", params))

    async def write_text_file(self, params: pm.WriteTextFileParams) -> None:
        await self.request("fs/write_text_file", params)

    async def call_tool(self, params: pm.ToolCallCall) -> pm.ToolCallCallResult:
        return pm.ToolCallCallResult.model_validate(await self.request("tool/call", params))

    async def create_terminal(self, params: pw.CreateTerminalParams) -> pw.CreateTerminalResult:
        return pw.CreateTerminalResult.model_validate(await self.request("terminal/create", params))

    async def terminal_output(self, params: pw.TerminalRef) -> pw.TerminalOutputResult:
        return pw.TerminalOutputResult.model_validate(await self.request("terminal/output", params))

    async def wait_for_terminal_exit(self, params: pw.TerminalRef) -> pw.WaitForExitResult:
        self.requests.append(("terminal/wait_for_exit", params.wire()))
        process, _ = self.terminals[params.terminal_id]
        code = await anyio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
        return pw.WaitForExitResult(**_exit(code))

    async def kill_terminal(self, params: pw.TerminalRef) -> None:
        await self.request("terminal/kill", params)

    async def release_terminal(self, params: pw.TerminalRef) -> None:
        await self.request("terminal/release", params)

    def _terminal(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """An editor's terminal: a real process group, its output in a file."""
        if method == "terminal/create":
            with tempfile.NamedTemporaryFile(prefix="term-", delete=False) as log:
                process = subprocess.Popen(
                    [params["command"], *params.get("args", [])],
                    cwd=params.get("cwd"),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            tid = f"term_{len(self.terminals) + 1}"
            self.terminals[tid] = (process, log.name)
            return {"terminalId": tid}
        tid = params["terminalId"]
        process, log_name = self.terminals[tid]
        if method == "terminal/output":
            code = process.poll()
            status = None if code is None else _exit(code)
            return {"output": Path(log_name).read_text(), "truncated": False, "exitStatus": status}
        if process.poll() is None:  # kill, and release of a running command
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if method == "terminal/release":
            self.released.append(tid)
            os.unlink(log_name)
        return {}

    async def request(self, method: str, model: BaseModel) -> Any:
        """Record the request as the wire has it, and answer as an editor does."""
        params = model.model_dump(by_alias=True, exclude_unset=True)
        self.requests.append((method, params))
        if method == "fs/read_text_file":
            return self._read(params)
        if method == "fs/write_text_file":
            return self._write(params)
        if method == "session/request_permission":
            return {"outcome": {"outcome": "selected", "optionId": self.permission}}
        if method.startswith("terminal/"):
            return self._terminal(method, params)
        raise RuntimeError(f"method not found: {method}")

    def _write(self, params: dict[str, Any]) -> dict[str, Any]:
        path = Path(params["path"])
        assert path.is_absolute()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(params["content"])
        self.buffers.pop(str(path), None)
        return {}

    def _read(self, params: dict[str, Any]) -> dict[str, Any]:
        path = params["path"]
        assert os.path.isabs(path)
        if path in self.buffers:
            text = self.buffers[path]
        else:
            try:
                text = Path(path).read_text()
            except FileNotFoundError:
                raise RuntimeError(f"file not found: {path}") from None
        lines = text.splitlines(keepends=True)
        start = (params.get("line") or 1) - 1
        limit = params.get("limit")
        end = None if limit is None or self.ignore_limit else start + limit
        return {"content": "".join(lines[start:end])}


def _exit(code: int) -> dict[str, Any]:
    if code < 0:
        return {"exitCode": None, "signal": signal.Signals(-code).name}
    return {"exitCode": code, "signal": None}


def make_ctx(
    cwd: Path, link: Any, roots: tuple[str, ...] = (), progress: Any = None
) -> ToolContext:
    return ToolContext("sess_test", "call_test", str(cwd), roots, link, progress)


def build_workspace(tmp: Path) -> tuple[Path, Path]:
    """A workspace with files, a .git folder, and symlinks that stay in or lead out.

    Returns ``(workspace, outside)``; ``outside/secret.txt`` holds ``TOP SECRET``."""
    ws = tmp / "ws"
    outside = tmp / "outside"
    (ws / "src" / "pkg").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    (ws / "src" / "a.py").write_text("import os\n\ndef hello():\n    return 'hello'\n")
    (ws / "src" / "pkg" / "b.py").write_text("def Hello():\n    return hello()  # hello\n")
    (ws / "README.md").write_text("# Demo\nSay hello.\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("hello from git internals\n")
    (ws / "link_out").symlink_to(outside, target_is_directory=True)
    (ws / "secret_link").symlink_to(outside / "secret.txt")
    (ws / "link_in").symlink_to(ws / "src", target_is_directory=True)
    (ws / "readme_link").symlink_to("README.md")
    return ws, outside


def escape_corpus(ws: Path, outside: Path) -> list[object]:
    """Paths every file tool must refuse: climbing, absolute, symlinks out, tricks."""
    secret = outside / "secret.txt"
    return [
        "../outside/secret.txt",
        "src/../../outside/secret.txt",
        "src/pkg/../../../outside",
        "..",
        "/etc/passwd",
        str(secret),
        str(outside),
        "//etc/passwd",
        "file:///etc/passwd",
        "file://" + str(ws) + "/%2e%2e/outside/secret.txt",
        "file://evil.example/" + str(ws) + "/README.md",
        "link_out/secret.txt",
        "link_out",
        "secret_link",
        "link_in/../../outside/secret.txt",
        "src/\x00.py",
        "src/" + "a" * 5000,
        "x" * 300,
        "src/\u202etxt.py",
        "src\u200b/a.py",
        "\uff0e\uff0e\uff0foutside/secret.txt",
        "\uff0e\uff0e/outside/secret.txt",
        "\u2025/outside/secret.txt",
        "src\u2215..\u2215..\u2215outside",
        "..\\outside\\secret.txt",
        "src/a.py\nmore",
        "src/\ud800.py",
        123,
        ["src/a.py"],
    ]
