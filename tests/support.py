"""Shared test helpers: a pytest-lsp client for the sidecar, a raw-bytes client, scripts.

The pytest-lsp client keeps params/results as plain dicts (pygls would otherwise turn
them into namedtuples that lose keys), drains the server's stderr, and closes the
server's stdin at teardown, which is how a non-LSP server learns to exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pygls.client import JsonRPCClient
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCProtocol,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)
from pytest_lsp import ClientServerConfig

from tests.conformance import Conformance

SERVER_COMMAND = [sys.executable, "-m", "threadline", "serve"]


def scripted(*rounds: list[dict[str, Any]]) -> str:
    """A ``scripted:`` model string replaying the given rounds."""
    return "scripted:" + json.dumps({"rounds": list(rounds)})


MAX_STRETCH = 10.0
"""The most `patience` stretches a deadline (a hang still fails, only later)."""


def patience(seconds: float) -> float:
    """A deadline for work whose speed is the machine's (a CPU model's answer, a
    process reaped by another): ``seconds`` on an idle machine, stretched by the load
    per core (the 1-minute load average, at most `MAX_STRETCH` times), so a busy
    shared machine does not fail a test that works, and a hang still fails it."""
    try:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        load = 1.0
    return seconds * min(max(1.0, load), MAX_STRETCH)


def sidecar_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["THREADLINE_HOME"] = str(home)
    env.setdefault("THREADLINE_LOG_LEVEL", "INFO")
    return env


CHECKS: list[Conformance] | None = None
"""When a suite turns conformance on (a list), every client started afterwards checks
each message it receives and files its :class:`Conformance` here."""


def conformance() -> Conformance | None:
    if CHECKS is None:
        return None
    check = Conformance()
    CHECKS.append(check)
    return check


class CheckedProtocol(JsonRPCProtocol):
    """pygls' protocol, handing every message received (and every request sent) to
    the conformance check when one is on."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conformance = conformance()

    def structure_message(self, data: dict[str, Any]) -> Any:
        # pygls calls this for every object it parses, inner ones first; only a
        # message has "jsonrpc".
        if self.conformance is not None and "jsonrpc" in data:
            self.conformance.received(data)
        return super().structure_message(data)

    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Callable[[Any], None] | None = None,
        msg_id: Any = None,
    ) -> Any:
        if msg_id is None:
            msg_id = str(uuid.uuid4())
        if self.conformance is not None:
            self.conformance.sent({"id": msg_id, "method": method})
        return super().send_request(method, params, callback, msg_id)


def _raw_converter() -> Any:
    conv = default_converter()

    def keep(obj: dict[str, Any], cls: type) -> Any:
        return cls(**obj)

    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        conv.register_structure_hook(cls, keep)
    return conv


class SidecarClient(JsonRPCClient):
    """A pygls JSON-RPC client that records ``session/update`` notifications."""

    def __init__(self) -> None:
        super().__init__(protocol_cls=CheckedProtocol, converter_factory=_raw_converter)
        self.updates: list[dict[str, Any]] = []
        self.stderr = bytearray()
        self._waiters: list[
            tuple[Callable[[dict[str, Any]], bool], asyncio.Future[dict[str, Any]]]
        ] = []
        self.server_requests: list[tuple[str, dict[str, Any]]] = []

        @self.feature("session/update")
        def _on_update(params: dict[str, Any]) -> None:
            self.updates.append(params)
            for pred, fut in list(self._waiters):
                if not fut.done() and pred(params):
                    fut.set_result(params)

    async def start_io(self, cmd: str, *args: str, **kwargs: Any) -> None:
        await super().start_io(cmd, *args, **kwargs)
        assert self._server is not None and self._server.stderr is not None
        self._async_tasks.append(asyncio.create_task(self._drain(self._server.stderr)))

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.stderr += chunk

    def on_request(self, method: str, handler: Callable[[dict[str, Any]], Awaitable[Any]]) -> None:
        async def wrapped(params: dict[str, Any]) -> Any:
            self.server_requests.append((method, params))
            return await handler(params)

        self.feature(method)(wrapped)

    async def call(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 60
    ) -> Any:
        return await asyncio.wait_for(self.protocol.send_request_async(method, params), timeout)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.protocol.notify(method, params)

    async def wait_update(
        self, pred: Callable[[dict[str, Any]], bool], timeout: float = 30
    ) -> dict[str, Any]:
        for u in self.updates:
            if pred(u):
                return u
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters.append((pred, fut))
        return await asyncio.wait_for(fut, timeout)

    def text_of(self, session_id: str, message_id: str | None = None) -> str:
        return "".join(
            u["update"]["content"]["text"]
            for u in self.updates
            if u["sessionId"] == session_id
            and u["update"]["sessionUpdate"] == "agent_message_chunk"
            and (message_id is None or u["update"].get("messageId") == message_id)
        )

    async def initialize(self) -> dict[str, Any]:
        caps = {"session": {"compaction": {}}}
        return await self.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps})

    async def new_session(self, cwd: str = "/tmp", **threadline: Any) -> str:
        params: dict[str, Any] = {"cwd": cwd, "mcpServers": []}
        if threadline:
            params["_meta"] = {"threadline": threadline}
        return str((await self.call("session/new", params))["sessionId"])

    async def prompt(self, session_id: str, text: str, timeout: float = 60) -> dict[str, Any]:
        return await self.call(
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
            timeout=timeout,
        )

    async def stop(self) -> None:
        """Close stdin so the sidecar exits, then wait for it (bounded)."""
        server = self._server
        if server is not None and server.stdin is not None:
            with contextlib.suppress(Exception):
                server.stdin.close()
        if server is not None and server.returncode is None:
            try:
                await asyncio.wait_for(server.wait(), 10)
            except TimeoutError:
                server.kill()
                await server.wait()
        self._stop_event.set()
        for t in self._async_tasks:
            if not t.done():
                t.cancel()
        await asyncio.gather(*self._async_tasks, return_exceptions=True)


async def start_sidecar(
    home: Path, *, initialize: bool = True, env: dict[str, str] | None = None
) -> SidecarClient:
    """``env`` adds to (or overrides) the environment, e.g. ``THREADLINE_HOST``."""
    config = ClientServerConfig(
        server_command=SERVER_COMMAND,
        client_factory=SidecarClient,
        server_env={**sidecar_env(home), **(env or {})},
    )
    client = await config.start()
    assert isinstance(client, SidecarClient)
    if initialize:
        await client.initialize()
    return client


class RawSidecar:
    """Bytes in, parsed messages out: for malformed input and framing tests."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.framing: str | None = None
        self.stderr = bytearray()
        self.conformance = conformance()
        self._drain_task = asyncio.create_task(self._drain())

    @classmethod
    async def start(cls, home: Path) -> RawSidecar:
        proc = await asyncio.create_subprocess_exec(
            *SERVER_COMMAND,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=sidecar_env(home),
            limit=64 * 1024 * 1024,
        )
        return cls(proc)

    async def _drain(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self.stderr += chunk

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def send(self, message: Any, framing: str = "headers") -> None:
        if self.conformance is not None:
            self.conformance.sent(message)
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        if framing == "lines":
            await self.write(body + b"\n")
        else:
            await self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def read(self, timeout: float = 30) -> dict[str, Any]:
        return await asyncio.wait_for(self._read(), timeout)

    async def _read(self) -> dict[str, Any]:
        out = self.proc.stdout
        assert out is not None
        first = await out.readline()
        if not first:
            raise EOFError("sidecar closed stdout")
        if first.lstrip().startswith(b"{"):
            self.framing = "lines"
            message = json.loads(first)
        else:
            self.framing = "headers"
            length = int(first.split(b":")[1])
            while (await out.readline()).strip():
                pass
            message = json.loads(await out.readexactly(length))
        if self.conformance is not None:
            self.conformance.received(message)
        return message

    async def response(self, msg_id: Any, timeout: float = 30) -> dict[str, Any]:
        """Read until the response to ``msg_id`` (notifications are skipped)."""
        while True:
            msg = await self.read(timeout)
            if "method" not in msg and msg.get("id") == msg_id:
                return msg

    async def close(self, timeout: float = 30) -> int:
        if self.proc.stdin is not None:
            with contextlib.suppress(Exception):
                self.proc.stdin.close()
        try:
            code = await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            code = await self.proc.wait()
        self._drain_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._drain_task
        return code


def count_rows(home: Path, store_url: str | None, table: str, session_id: str | None = None) -> int:
    """Rows of a store table (``chunks``, ``inflight``, ``events``...), read straight from
    the database a sidecar used: SQLite in ``home`` or the PostgreSQL ``store_url``."""
    where = "" if session_id is None else " WHERE session_id=%s"
    args = () if session_id is None else (session_id,)
    if store_url is None:
        import sqlite3

        db = sqlite3.connect(home / "threadline.db")
        try:
            sql = f"SELECT count(*) FROM {table}{where.replace('%s', '?')}"
            return int(db.execute(sql, args).fetchone()[0])
        finally:
            db.close()
    import psycopg

    with psycopg.connect(store_url) as conn:
        row = conn.execute(f"SELECT count(*) FROM tl_{table}{where}", args).fetchone()  # pyright: ignore[reportArgumentType]
        assert row is not None
        return int(row[0])


def stop_process(proc: subprocess.Popen[Any], grace: float = 10) -> None:
    """Stop a server a test started: terminate, then kill if it lingers past ``grace``."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(grace)
