"""A minimal ACP client for the conformance suite, written here against the protocol
(newline-delimited JSON-RPC, as ACP clients speak it), and the checks it applies to
every message, both ways.

* v2: each message against Threadline's v2 models (``threadline_protocol.acp_v2``,
  written from ACP's ``schema/v2``); the models the server fills are closed, and every
  model's top-level keys are checked against the fields it defines, so an unknown
  top-level key is a problem in either direction.
* v1: each message against ACP's vendored v1 schema and ``protocol/schema.json``
  (``tests.conformance``), and its top-level keys against the definition's properties.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from tests.conformance import Conformance, _acp, _threadline, acp_methods
from threadline_protocol.acp_v2 import META_KEY
from threadline_protocol.acp_v2_methods import METHODS_V2
from threadline_protocol.methods import METHODS

SERVE = [sys.executable, "-m", "threadline", "serve"]

V1_KEPT: dict[tuple[str, str], set[str]] = {
    ("session/new", "result"): {"models"},
    ("session/prompt", "result"): {"usage"},
}
"""Top-level keys v1's schema does not define that Threadline still sends, each said
and explained in docs/protocol.md ("ACP 1.21: how Threadline differs")."""


def scripted(*rounds: list[dict[str, Any]]) -> str:
    return "scripted:" + json.dumps({"rounds": list(rounds)})


# -- the checks ------------------------------------------------------------------------------


def unknown_keys(model: type[BaseModel], value: Any) -> set[str]:
    if not isinstance(value, dict):
        return set()
    known = {f.alias or name for name, f in model.model_fields.items()}
    return set(value) - known


def check_model(model: type[BaseModel] | None, value: Any, where: str) -> list[str]:
    if model is None:
        return [] if value in (None, {}) else [f"{where}: expected nothing, got {value!r:.200}"]
    problems: list[str] = []
    try:
        model.model_validate(value)
    except ValidationError as exc:
        problems.append(f"{where}: {exc.errors(include_url=False)[:3]}")
    extra = unknown_keys(model, value)
    if extra:
        problems.append(f"{where}: top-level keys the schema does not define: {sorted(extra)}")
    return problems


def old_meta(value: Any, where: str) -> list[str]:
    """v2 carries Threadline's ``_meta`` under ``_threadline`` (TL-V2-EXT-002)."""
    if isinstance(value, list):
        return [p for v in value for p in old_meta(v, where)]
    if not isinstance(value, dict):
        return []
    out: list[str] = []
    meta = value.get("_meta")
    if isinstance(meta, dict):
        custom = [k for k in meta if not k.startswith("_") and k not in ("traceparent",)]
        if custom:
            out.append(f"{where}: _meta keys that are not _-prefixed: {custom}")
        if not isinstance(meta.get(META_KEY, {}), dict):
            out.append(f"{where}: _meta.{META_KEY} is not an object")
    for v in value.values():
        out.extend(old_meta(v, where))
    return out


class Checks:
    """Every message one connection sends and receives, checked as its version says."""

    def __init__(self) -> None:
        self.version = 1
        self.problems: list[str] = []
        self.sent_problems: list[str] = []
        self.pending: dict[Any, str] = {}
        self.v1 = Conformance()

    def sent(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if "id" in message and isinstance(method, str):
            self.pending[message["id"]] = method
        if method == "initialize":
            version = message.get("params", {}).get("protocolVersion", 1)
            self.version = 2 if isinstance(version, int) and version >= 2 else 1
        self.v1.sent(message)
        if isinstance(method, str):
            self.sent_problems += self._part(method, "params", message.get("params"), "sent")
        elif "result" in message:
            asked = self.pending.pop(("server", message.get("id")), None)
            if asked is not None:
                self.sent_problems += self._part(asked, "result", message["result"], "sent")

    def received(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self.pending[("server", message["id"])] = method
            self.problems += self._part(method, "params", message.get("params"), "received")
            return
        asked = self.pending.pop(message.get("id"), None)
        if "error" in message:
            err = message["error"]
            if not (isinstance(err.get("code"), int) and isinstance(err.get("message"), str)):
                self.problems.append(f"error without code and message: {message!r:.200}")
            return
        if asked is not None:
            if asked == "initialize" and "info" in message["result"]:
                self.version = 2
            elif asked == "initialize":
                self.version = 1
            self.problems += self._part(asked, "result", message.get("result"), "received")

    def _part(self, method: str, part: str, value: Any, way: str) -> list[str]:
        where = f"{way} {method} {part}"
        if self.version == 2:
            spec = METHODS_V2.get(method)
            if spec is None:
                return [] if way == "sent" else [f"{where}: not a v2 method"]
            model = spec.params if part == "params" else spec.result
            return check_model(model, value, where) + old_meta(value, where)
        if part == "params":
            found = self.v1.check({"jsonrpc": "2.0", "method": method, "params": value})
        else:
            found = self._v1_result(method, value)
        return [f"{way}: {p}" for p in found] + self._v1_keys(method, part, value, where)

    def _v1_result(self, method: str, value: Any) -> list[str]:
        self.v1.pending["_"] = method
        return self.v1.check({"jsonrpc": "2.0", "id": "_", "result": value})

    def _v1_keys(self, method: str, part: str, value: Any, where: str) -> list[str]:
        if not isinstance(value, dict) or method not in METHODS:
            return []
        name = acp_methods().get((method, part))
        if name is not None:
            props = set(_acp()["$defs"][name].get("properties", {}))
        else:
            ref = _threadline()["methods"][method][part]
            if ref is None:
                return []
            props = set(_threadline()["$defs"][ref["$ref"].rsplit("/", 1)[-1]]["properties"])
        extra = set(value) - props - V1_KEPT.get((method, part), set())
        return [f"{where}: top-level keys v1 does not define: {sorted(extra)}"] if extra else []


# -- the client ------------------------------------------------------------------------------


Handler = Callable[[dict[str, Any]], Awaitable[Any]]


class Agent:
    """One ``threadline serve`` process, spoken to over newline-delimited JSON-RPC."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.checks = Checks()
        self.messages: list[dict[str, Any]] = []
        self.handlers: dict[str, Handler] = {}
        self._answers: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._arrived = asyncio.Condition()
        self._next = 0
        self.arrays: list[list[dict[str, Any]]] = []
        """The arrays that answered batches."""
        self._serving: set[asyncio.Task[None]] = set()
        self._reader = asyncio.create_task(self._read())
        self._stderr = asyncio.create_task(self._drain())
        self.stderr = bytearray()

    @classmethod
    async def start(cls, home: Path) -> Agent:
        env = {**os.environ, "THREADLINE_HOME": str(home), "THREADLINE_LOG_LEVEL": "INFO"}
        proc = await asyncio.create_subprocess_exec(
            *SERVE, stdin=-1, stdout=-1, stderr=-1, env=env, limit=16 << 20
        )
        return cls(proc)

    async def _drain(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self.stderr += chunk

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            parsed = json.loads(line)
            if isinstance(parsed, list):  # a batch's answers
                self.arrays.append(parsed)
            for message in parsed if isinstance(parsed, list) else [parsed]:
                await self._received(message)

    async def _received(self, message: dict[str, Any]) -> None:
        self.checks.received(message)
        if "method" in message and "id" in message:
            task = asyncio.create_task(self._serve(message))
            self._serving.add(task)
            task.add_done_callback(self._serving.discard)
        elif "method" not in message:
            future = self._answers.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(message)
        async with self._arrived:
            self.messages.append(message)
            self._arrived.notify_all()

    async def _serve(self, message: dict[str, Any]) -> None:
        handler = self.handlers.get(message["method"])
        if handler is None:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32601, "message": "no"},
            }
        else:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "result": await handler(message["params"]),
            }
        await self._write(reply)

    async def _write(self, message: dict[str, Any]) -> None:
        self.checks.sent(message)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A request's whole response (``result`` or ``error``)."""
        self._next += 1
        msg_id = self._next
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[msg_id] = future
        await self._write(
            {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}
        )
        return await asyncio.wait_for(future, 30)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        response = await self.send(method, params)
        assert "result" in response, f"{method}: {response}"
        return response["result"]

    async def batch(self, entries: list[Any]) -> None:
        """Send entries as one JSON-RPC batch (each checked as if sent alone)."""
        for entry in entries:
            if isinstance(entry, dict):
                self.checks.sent(entry)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(entries).encode() + b"\n")
        await self.proc.stdin.drain()

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def updates(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in self.messages
            if m.get("method") == "session/update"
            and m["params"]["sessionId"] == session_id
            and (kind is None or m["params"]["update"]["sessionUpdate"] == kind)
        ]

    async def wait_for(
        self, found: Callable[[list[dict[str, Any]]], Any], timeout: float = 30
    ) -> Any:
        """Until ``found(messages)`` is truthy (its value)."""

        async def waiting() -> Any:
            async with self._arrived:
                while not (got := found(self.messages)):
                    await self._arrived.wait()
                return got

        return await asyncio.wait_for(waiting(), timeout)

    async def idle(
        self, session_id: str, count: int = 1, timeout: float = 30
    ) -> list[dict[str, Any]]:
        """The idle ``state_update``s carrying a stop reason, once there are ``count``."""

        def ended(_: list[dict[str, Any]]) -> list[dict[str, Any]]:
            ends = [u for u in self.updates(session_id, "state_update") if "stopReason" in u]
            return ends if len(ends) >= count else []

        return await self.wait_for(ended, timeout)

    async def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(Exception):
                self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 20)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        for task in (self._reader, self._stderr):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
