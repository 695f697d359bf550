"""Async client for a Threadline sidecar over stdio (Content-Length framing).

It spawns ``threadline serve`` (or any command), matches responses to requests,
delivers ``session/update`` notifications to subscribers, and answers the server's
requests (permission, ``tool/call``, ``fs/*``) with handlers the caller registers.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from threadline_protocol.rpc_error import RpcError

UpdateHandler = Callable[[str, dict[str, Any]], None]
RequestHandler = Callable[[dict[str, Any]], Awaitable[Any]]


def server_command() -> list[str]:
    """Run the sidecar with the same interpreter as this client."""
    return [sys.executable, "-m", "threadline", "serve"]


class ThreadlineClient:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._ids = itertools.count(1)
        self._pending: dict[int | str, asyncio.Future[Any]] = {}
        self._update_handlers: list[UpdateHandler] = []
        self._request_handlers: dict[str, RequestHandler] = {}
        self._reader: asyncio.Task[None] | None = None
        self._write_lock = asyncio.Lock()
        self.closed = asyncio.Event()
        self._answering: set[asyncio.Task[None]] = set()
        self.server_info: dict[str, Any] = {}

    # -- lifecycle -----------------------------------------------------------------------

    @classmethod
    async def spawn(
        cls,
        command: Sequence[str] | None = None,
        *,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        stderr: int | None = None,
    ) -> ThreadlineClient:
        proc = await asyncio.create_subprocess_exec(
            *(command or server_command()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            limit=64 * 1024 * 1024,
        )
        client = cls(proc)
        client._reader = asyncio.create_task(client._read_loop())
        return client

    async def initialize(self, **capabilities: Any) -> dict[str, Any]:
        result = await self.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": capabilities
                or {
                    "fs": {"readTextFile": False, "writeTextFile": False},
                    "session": {"compaction": {}},
                },
                "clientInfo": {"name": "threadline-python-client", "version": "0.1.0"},
            },
        )
        self.server_info = result
        return result

    async def close(self, timeout: float = 5.0) -> int:
        """shutdown + exit, then wait for the process; returns its exit code."""
        if self.process.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.request("shutdown"), timeout)
                await self.notify("exit")
            if self.process.stdin is not None:
                with contextlib.suppress(Exception):
                    self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), timeout)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        return self.process.returncode or 0

    async def __aenter__(self) -> ThreadlineClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- wire ----------------------------------------------------------------------------

    async def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=False).encode()
        stdin = self.process.stdin
        if stdin is None:
            raise ConnectionError("server stdin is closed")
        async with self._write_lock:
            stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            await stdin.drain()

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._write(message)
            return await future
        except asyncio.CancelledError:
            # Withdraw it, as LSP does: the server stops the work (a compaction…).
            if not self.closed.is_set():
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.notify("$/cancelRequest", {"id": msg_id}))
            raise
        finally:
            self._pending.pop(msg_id, None)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._write(message)

    def on_update(self, handler: UpdateHandler) -> Callable[[], None]:
        """Subscribe to ``session/update``; returns an unsubscribe function."""
        self._update_handlers.append(handler)
        return lambda: self._update_handlers.remove(handler)

    def on_request(self, method: str, handler: RequestHandler) -> None:
        self._request_handlers[method] = handler

    async def _read_loop(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while True:
                length = None
                while True:
                    line = await stdout.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        if length is not None:
                            break
                        continue
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                body = await stdout.readexactly(length)
                self._dispatch(json.loads(body))
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            self.closed.set()
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("the sidecar exited"))

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message:
            if "id" in message:
                task = asyncio.create_task(self._answer(message))
                self._answering.add(task)
                task.add_done_callback(self._answering.discard)
            elif message["method"] == "session/update":
                params = message.get("params") or {}
                for handler in list(self._update_handlers):
                    handler(params.get("sessionId", ""), params.get("update", {}))
            return
        future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return
        if "error" in message:
            err = message["error"]
            future.set_exception(
                RpcError(err.get("code", 0), err.get("message", ""), err.get("data"))
            )
        else:
            future.set_result(message.get("result"))

    async def _answer(self, message: dict[str, Any]) -> None:
        handler = self._request_handlers.get(message["method"])
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if handler is None:
            reply["error"] = {"code": -32601, "message": f"client has no {message['method']}"}
        else:
            try:
                reply["result"] = await handler(message.get("params") or {})
            except Exception as exc:
                reply["error"] = {"code": -32603, "message": str(exc)}
        with contextlib.suppress(Exception):
            await self._write(reply)

    # -- typed helpers -------------------------------------------------------------------

    async def new_session(self, cwd: str | None = None, **threadline: Any) -> str:
        params: dict[str, Any] = {"cwd": cwd or os.getcwd(), "mcpServers": []}
        if threadline:
            params["_meta"] = {"threadline": threadline}
        result = await self.request("session/new", params)
        return str(result["sessionId"])

    async def prompt(
        self,
        session_id: str,
        text: str,
        while_running: str | None = None,
        content: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """One turn; with ``while_running`` (``steer``, ``queue``) a session that is
        working takes the prompt into its running turn, or runs it next. ``content``:
        the prompt's blocks (text and images) instead of ``text`` alone."""
        params: dict[str, Any] = {
            "sessionId": session_id,
            "prompt": content if content is not None else [{"type": "text", "text": text}],
        }
        if while_running is not None:
            params["_meta"] = {"threadline": {"whileRunning": while_running}}
        return await self.request("session/prompt", params)

    async def interrupt(self, session_id: str, clear_queue: bool = False) -> dict[str, Any]:
        params: dict[str, Any] = {"sessionId": session_id}
        if clear_queue:
            params["_meta"] = {"threadline": {"clearQueue": True}}
        return await self.request("session/interrupt", params)

    async def queue(self, session_id: str) -> list[dict[str, Any]]:
        """The prompts waiting while the session works, in order."""
        return list(
            (await self.request("session/queue/list", {"sessionId": session_id}))["prompts"]
        )

    async def remove_queued(self, session_id: str, prompt_id: str | None = None) -> list[str]:
        params: dict[str, Any] = {"sessionId": session_id}
        if prompt_id is not None:
            params["id"] = prompt_id
        return list((await self.request("session/queue/remove", params))["ids"])

    async def resume_queue(self, session_id: str) -> list[str]:
        return list((await self.request("session/queue/resume", {"sessionId": session_id}))["ids"])

    async def history(self, session_id: str) -> list[dict[str, Any]]:
        result = await self.request("session/history", {"sessionId": session_id})
        return list(result["messages"])

    async def list_sessions(self, cwd: str | None = None) -> list[dict[str, Any]]:
        params = {"cwd": cwd} if cwd else {}
        return list((await self.request("session/list", params))["sessions"])
