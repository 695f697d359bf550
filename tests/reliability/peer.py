"""A small asyncio JSON-RPC client over two pipe fds (newline-delimited, as ACP clients
speak), for sidecars the crash suite forks and kills.

It keeps every ``session/update`` it receives, answers server requests with the
handlers a test registers (or never, when the handler never returns), and notices
the end of the stream so a test can drain everything a killed server wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

Handler = Callable[[dict[str, Any]], Awaitable[Any]]


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.data = error.get("data")


class ServerClosed(Exception):
    """The sidecar's stdout ended before the answer came."""


class Peer:
    def __init__(self, write_fd: int, read_fd: int) -> None:
        self._write_fd = write_fd
        self._read_fd = read_fd
        self._next = 0
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self.handlers: dict[str, Handler] = {}
        self.updates: list[dict[str, Any]] = []
        self.server_requests: list[tuple[str, dict[str, Any]]] = []
        self.closed = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reader_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=64 << 20)
        pipe = os.fdopen(self._read_fd, "rb", buffering=0)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        self._reader_task = asyncio.create_task(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                if not line.endswith(b"\n"):
                    break  # half a message: the server died while writing it
                if line.strip():
                    self._dispatch(json.loads(line))
        finally:
            self.closed.set()
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(ServerClosed("the sidecar closed its output"))

    def _dispatch(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if method is None:
            fut = self._pending.pop(msg.get("id"), None)
            if fut is not None and not fut.done():
                if "error" in msg:
                    fut.set_exception(RpcError(msg["error"]))
                else:
                    fut.set_result(msg.get("result"))
            return
        if "id" not in msg:
            if method == "session/update":
                self.updates.append(msg["params"])
            return
        self.server_requests.append((method, msg.get("params") or {}))
        handler = self.handlers.get(method)
        if handler is not None:
            task = asyncio.create_task(self._answer(msg["id"], handler, msg.get("params") or {}))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _answer(self, msg_id: Any, handler: Handler, params: dict[str, Any]) -> None:
        try:
            result = await handler(params)
        except Exception as exc:
            error = {"code": -32000, "message": str(exc)}
            self._send({"jsonrpc": "2.0", "id": msg_id, "error": error})
        else:
            self._send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def _send(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg).encode() + b"\n"
        with contextlib.suppress(BrokenPipeError, OSError):
            while data:
                written = os.write(self._write_fd, data)
                data = data[written:]

    async def call(self, method: str, params: dict[str, Any], timeout: float = 30) -> Any:
        if self.closed.is_set():
            raise ServerClosed("the sidecar closed its output")
        self._next += 1
        msg_id = self._next
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await asyncio.wait_for(fut, timeout)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def wait_closed(self, timeout: float = 10) -> None:
        await asyncio.wait_for(self.closed.wait(), timeout)

    async def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._write_fd)
        if self._reader_task is not None:
            with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.closed.wait()), 10)
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader_task
        for task in list(self._tasks):
            task.cancel()
