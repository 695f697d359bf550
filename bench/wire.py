"""A deliberately thin JSON-RPC client over a child process's stdio, for measuring.

Every server in the bench (Threadline, bare pygls, the ACP SDK agent) is driven by
this same client, so the client's own cost is identical on both sides of every ratio.
A reader thread does blocking ``os.read`` calls and stamps each message with
``time.perf_counter_ns()`` (``CLOCK_MONOTONIC`` on Linux, the same clock the server
processes read) as soon as it is parsed, so latencies are measured where an editor
would see the message, without an event loop's scheduling in between.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from threadline_protocol.rpc_error import RpcError

Framing = Literal["headers", "lines"]

NO_REPLY = object()
"""Returned by a request handler to leave the server's request unanswered for ever."""

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_LENGTH = re.compile(rb"content-length\s*:\s*(\d+)", re.IGNORECASE)

UpdateHandler = Callable[[dict[str, Any], int], None]
RequestHandler = Callable[[dict[str, Any], int], Any]


@dataclass(slots=True)
class Pending:
    """One request in flight; ``t_sent``/``t_done`` are ``perf_counter_ns`` stamps."""

    method: str
    t_sent: int
    t_done: int = 0
    t_recv: int = 0
    """When the read that completed the response returned, before it was parsed."""
    result: Any = None
    error: dict[str, Any] | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def wait(self, timeout: float) -> Any:
        if not self.done.wait(timeout):
            raise TimeoutError(f"{self.method} not answered within {timeout:g} s")
        if self.error is not None:
            e = self.error
            raise RpcError(int(e.get("code", 0)), str(e.get("message", "")), e.get("data"))
        return self.result

    @property
    def ms(self) -> float:
        """Sent → response parsed by the client."""
        return (self.t_done - self.t_sent) / 1e6

    @property
    def received_ms(self) -> float:
        """Sent → last byte of the response read (the client's JSON parse excluded)."""
        return (self.t_recv - self.t_sent) / 1e6


def encode(message: dict[str, Any], framing: Framing) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    if framing == "lines":
        return body + b"\n"
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Connection:
    """A spawned server and the client end of its pipes."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        framing: Framing = "headers",
        stderr: Path | None = None,
    ) -> None:
        self.framing: Framing = framing
        self.on_update: UpdateHandler | None = None
        self.on_request: dict[str, RequestHandler] = {}
        self.messages_in = 0
        self.bytes_in = 0
        self.reader_cpu = 0.0
        """CPU seconds the reader thread has used: shows whether the client kept up."""
        self._ids = itertools.count(1)
        self._pending: dict[int, Pending] = {}
        self._write_lock = threading.Lock()
        self._reading = threading.Event()
        self._reading.set()
        self.eof = threading.Event()
        err = open(stderr, "ab") if stderr is not None else subprocess.DEVNULL  # noqa: SIM115
        self.t_spawn = time.perf_counter_ns()
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            bufsize=0,
        )
        if stderr is not None:
            err.close()  # type: ignore[union-attr]
        self._reader = threading.Thread(target=self._read_loop, name="bench-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    # -- sending ----------------------------------------------------------------------

    def _write(self, message: dict[str, Any]) -> None:
        data = encode(message, self.framing)
        stdin = self.proc.stdin
        assert stdin is not None
        with self._write_lock:
            stdin.write(data)

    def send(self, method: str, params: dict[str, Any] | None = None) -> Pending:
        """Send a request without waiting; the returned ``Pending`` completes on reply."""
        msg_id = next(self._ids)
        pending = Pending(method, 0)
        self._pending[msg_id] = pending  # before the write: the answer can beat us back
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        pending.t_sent = time.perf_counter_ns()
        self._write(message)
        return pending

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60) -> Any:
        return self.send(method, params).wait(timeout)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    # -- reading ----------------------------------------------------------------------

    def pause_reading(self) -> None:
        """Stop reading stdout (the server's writes back up into the pipe)."""
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def _read_loop(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        fd = stdout.fileno()
        buf = bytearray()
        split = self._split_headers if self.framing == "headers" else self._split_lines
        try:
            while True:
                self._reading.wait()
                data = os.read(fd, 1 << 20)
                t_read = time.perf_counter_ns()
                if not data:
                    return
                self.bytes_in += len(data)
                buf += data
                bodies = split(buf)
                if bodies:
                    # One parse per read, not per message: keeps the client well ahead
                    # of a server sending 100,000 tiny notifications.
                    for msg in json.loads(b"[" + b",".join(bodies) + b"]"):
                        self._dispatch(msg, t_read)
                self.reader_cpu = time.thread_time()
        except OSError:
            return
        finally:
            self.eof.set()
            for p in list(self._pending.values()):
                if not p.done.is_set():
                    p.error = {"code": -1, "message": "server exited"}
                    p.done.set()

    @staticmethod
    def _split_headers(buf: bytearray) -> list[bytes]:
        out: list[bytes] = []
        pos = 0
        n = len(buf)
        while True:
            end = buf.find(b"\r\n\r\n", pos)
            if end < 0:
                break
            m = _LENGTH.search(buf, pos, end)
            if m is None:
                raise ValueError(f"frame without Content-Length: {bytes(buf[pos:end])!r}")
            start = end + 4
            stop = start + int(m.group(1))
            if stop > n:
                break
            out.append(bytes(buf[start:stop]))
            pos = stop
        del buf[:pos]
        return out

    @staticmethod
    def _split_lines(buf: bytearray) -> list[bytes]:
        end = buf.rfind(b"\n")
        if end < 0:
            return []
        lines = bytes(buf[:end]).split(b"\n")
        del buf[: end + 1]
        return [line for line in lines if line.strip()]

    def _dispatch(self, msg: dict[str, Any], t_read: int) -> None:
        t = time.perf_counter_ns()
        self.messages_in += 1
        method = msg.get("method")
        if method is None:
            pending = self._pending.pop(msg.get("id"), None)  # type: ignore[arg-type]
            if pending is None:
                return
            pending.t_done = t
            pending.t_recv = t_read
            pending.result = msg.get("result")
            pending.error = msg.get("error")
            pending.done.set()
            return
        if "id" not in msg:
            if method == "session/update" and self.on_update is not None:
                self.on_update(msg.get("params") or {}, t)
            return
        handler = self.on_request.get(method)
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
        if handler is None:
            reply["error"] = {"code": -32601, "message": f"bench client has no {method}"}
        else:
            result = handler(msg.get("params") or {}, t)
            if result is NO_REPLY:
                return
            reply["result"] = result
        self._write(reply)

    # -- process ----------------------------------------------------------------------

    def rss_kb(self) -> int:
        """Resident set size of the server process, from ``/proc``."""
        return _proc_status_kb(self.proc.pid, "VmRSS")

    def peak_rss_kb(self) -> int:
        return _proc_status_kb(self.proc.pid, "VmHWM")

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK

    def close(self, timeout: float = 5.0) -> None:
        """``shutdown`` + ``exit`` when the server knows them, then EOF, then kill."""
        if self.proc.poll() is None:
            self.resume_reading()
            try:
                self.call("shutdown", None, timeout=timeout)
                self.notify("exit")
            except (RpcError, TimeoutError, OSError):
                pass
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _proc_status_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)
