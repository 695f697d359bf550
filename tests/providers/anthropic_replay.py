"""A loopback server replaying Anthropic's documented Messages SSE wire format.

``POST /v1/messages`` answers with the next queued script: a list of ``(event, data)``
pairs written as ``event: <name>\\ndata: <json>\\n\\n`` over HTTP/1.1 chunked
encoding, with ``ping`` events in between as the real API sends them. Each request is
recorded with its raw body bytes, so tests can assert what the SDK put on the wire.

The builders below produce the event sequences of the streaming docs: message_start
(with usage, cache tokens included), content blocks (thinking with thinking_delta and
signature_delta, redacted_thinking, text, tool_use with input_json_delta), then
message_delta (stop_reason, cumulative usage) and message_stop.
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Event = tuple[str, dict[str, Any]]


def message_start(
    input_tokens: int = 25, cache_read: int = 0, cache_write: int = 0, msg_id: str = "msg_01"
) -> list[Event]:
    return [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "claude-replay",
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": input_tokens,
                        "cache_creation_input_tokens": cache_write,
                        "cache_read_input_tokens": cache_read,
                        "output_tokens": 1,
                    },
                },
            },
        )
    ]


def thinking(index: int, chunks: list[str], signature_parts: list[str]) -> list[Event]:
    events: list[Event] = [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        )
    ]
    for c in chunks:
        events.append(_delta(index, {"type": "thinking_delta", "thinking": c}))
    for s in signature_parts:
        events.append(_delta(index, {"type": "signature_delta", "signature": s}))
    return [*events, _stop(index)]


def redacted(index: int, data: str) -> list[Event]:
    start = {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "redacted_thinking", "data": data},
    }
    return [("content_block_start", start), _stop(index)]


def text(index: int, chunks: list[str]) -> list[Event]:
    start = {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "text", "text": ""},
    }
    deltas = [_delta(index, {"type": "text_delta", "text": c}) for c in chunks]
    return [("content_block_start", start), *deltas, _stop(index)]


def tool_use(index: int, call_id: str, name: str, json_parts: list[str]) -> list[Event]:
    start = {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
    }
    deltas = [_delta(index, {"type": "input_json_delta", "partial_json": p}) for p in json_parts]
    return [("content_block_start", start), *deltas, _stop(index)]


def message_end(stop_reason: str = "end_turn", output_tokens: int = 42) -> list[Event]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def _delta(index: int, delta: dict[str, Any]) -> Event:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _stop(index: int) -> Event:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any


@dataclass
class Reply:
    events: list[Event] = field(default_factory=list)
    status: int = 200
    error: dict[str, Any] | None = None
    cut_after: int | None = None
    """Cut the connection after this many events (a dropped stream)."""


class AnthropicReplay:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"replay": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> AnthropicReplay:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def pop(self) -> Reply | None:
        with self._lock:
            return self.replies.pop(0) if self.replies else None

    def message_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.startswith("/v1/messages")]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    replay: AnthropicReplay

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self.replay.requests.append(Recorded(self.path, _lower(self.headers.items()), b"", None))
        self._json(200, {"data": [{"id": "claude-replay", "type": "model"}], "has_more": False})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.replay.requests.append(
            Recorded(self.path, _lower(self.headers.items()), raw, json.loads(raw))
        )
        reply = self.replay.pop()
        if reply is None:
            self._json(
                500, {"type": "error", "error": {"type": "api_error", "message": "no reply"}}
            )
            return
        if reply.status != 200:
            self._json(reply.status, {"type": "error", "error": reply.error or {}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i, (name, data) in enumerate(reply.events):
            if reply.cut_after is not None and i >= reply.cut_after:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self._chunk(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            if i == 0:
                self._chunk(b'event: ping\ndata: {"type": "ping"}\n\n')
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _json(self, code: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _lower(items: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in items}
