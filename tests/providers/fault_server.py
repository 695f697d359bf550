"""A fault-injecting OpenAI-compatible server on loopback, for policy tests.

Each ``POST /v1/chat/completions`` takes the next :class:`Scenario` from a queue (the
last default repeats once the queue is empty) and plays it byte by byte over a real
socket: HTTP/1.1 with chunked transfer encoding, as real servers stream SSE. So a
"dropped" stream is a real cut in the middle of a chunked body, a stall is a real
silence, and malformed SSE is real bytes the SDK has to parse.

It runs in a daemon thread (stdlib ``http.server``); requests are recorded (path,
headers, JSON body) for assertions.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Scenario:
    """What one request gets.

    ``status`` != 200 answers with an error body; otherwise ``chunks`` are streamed
    as content deltas, then the ``ending``: ``finish`` (finish reason + usage +
    [DONE]), ``drop`` (socket cut mid-body), ``eof`` (body ended cleanly but with no
    finish reason), ``stall`` (silence for ``stall_seconds``, then finish),
    ``malformed`` (an event whose data is not JSON) or ``error_event`` (an in-stream
    ``{"error": ...}`` event, as OpenRouter and vLLM send). A ``"stream": false``
    request gets the same content as one JSON completion.
    """

    status: int = 200
    chunks: list[str] = field(default_factory=list)
    ending: str = "finish"
    finish_reason: str = "stop"
    headers: dict[str, str] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    stall_seconds: float = 0.0
    chunk_delay: float = 0.0
    tool_call: dict[str, Any] | None = None
    usage: dict[str, int] | None = field(
        default_factory=lambda: {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    )
    first_byte_delay: float = 0.0


def ok(*chunks: str, **kw: Any) -> Scenario:
    return Scenario(chunks=list(chunks), **kw)


def status(code: int, message: str = "injected failure", **kw: Any) -> Scenario:
    return Scenario(status=code, error={"message": message, "type": "server_error"}, **kw)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float


class FaultServer:
    def __init__(self, default: Scenario | None = None) -> None:
        self.scenarios: list[Scenario] = []
        self.default = default or ok("Hello", " from", " the", " fault", " server.")
        self.requests: list[Recorded] = []
        self.release = threading.Event()
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"fault": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FaultServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    def push(self, *scenarios: Scenario) -> None:
        with self._lock:
            self.scenarios.extend(scenarios)

    def next_scenario(self) -> Scenario:
        with self._lock:
            return self.scenarios.pop(0) if self.scenarios else self.default

    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fault: FaultServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _record(self, body: Any) -> None:
        self.fault.requests.append(
            Recorded(self.command, self.path, _lower(self.headers.items()), body, time.monotonic())
        )

    def do_GET(self) -> None:
        self._record(None)
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "fault-model", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw
        self._record(body)
        scenario = self.fault.next_scenario()
        if scenario.first_byte_delay:
            self.fault.release.wait(scenario.first_byte_delay)
        if scenario.status != 200:
            self._json(scenario.status, {"error": scenario.error or {}}, scenario.headers)
            return
        if isinstance(body, dict) and body.get("stream") is False:
            self._json(200, _completion(scenario, body))
            return
        self._stream(scenario, body if isinstance(body, dict) else {})

    def _json(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _event(self, payload: Any) -> None:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        self._chunk(f"data: {text}\n\n".encode())

    def _stream(self, s: Scenario, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in s.headers.items():
            self.send_header(k, v)
        self.end_headers()
        base = {"id": "chatcmpl-fault", "object": "chat.completion.chunk", "created": 0}
        base["model"] = str(body.get("model", "fault-model"))

        def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}

        try:
            self._event(delta({"role": "assistant", "content": ""}))
            for text in s.chunks:
                if s.chunk_delay:
                    time.sleep(s.chunk_delay)
                self._event(delta({"content": text}))
            if s.tool_call is not None:
                call = s.tool_call
                args = json.dumps(call.get("arguments", {}))
                head = {"index": 0, "id": call.get("id", "call_fault_1"), "type": "function"}
                first = {**head, "function": {"name": call["name"], "arguments": args[:5]}}
                self._event(delta({"tool_calls": [first]}))
                rest = {"index": 0, "function": {"arguments": args[5:]}}
                self._event(delta({"tool_calls": [rest]}))
            if s.ending == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if s.ending == "eof":
                self.wfile.write(b"0\r\n\r\n")
                return
            if s.ending == "malformed":
                self._chunk(b'data: {"choices": [{"index": 0, "delta": {"content": "x"\n\n')
                self.wfile.write(b"0\r\n\r\n")
                return
            if s.ending == "error_event":
                self._event({"error": {"message": "upstream overloaded", "code": 502}})
                self._event("[DONE]")
                self.wfile.write(b"0\r\n\r\n")
                return
            if s.ending == "stall":
                self.fault.release.wait(s.stall_seconds)
            self._event(delta({}, s.finish_reason))
            if s.usage is not None and (body.get("stream_options") or {}).get("include_usage"):
                self._event({**base, "choices": [], "usage": s.usage})
            self._event("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def _completion(s: Scenario, body: dict[str, Any]) -> dict[str, Any]:
    """The scenario as one non-streamed completion (``"stream": false`` requests)."""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(s.chunks) or None}
    if s.tool_call is not None:
        message["tool_calls"] = [
            {
                "id": s.tool_call.get("id", "call_fault_1"),
                "type": "function",
                "function": {
                    "name": s.tool_call["name"],
                    "arguments": json.dumps(s.tool_call.get("arguments", {})),
                },
            }
        ]
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": 0,
        "model": str(body.get("model", "fault-model")),
        "choices": [{"index": 0, "message": message, "finish_reason": s.finish_reason}],
        "usage": s.usage,
    }


def _lower(items: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in items}
