"""Prompt a scripted stream and account for what arrives: shared by the stream figures."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .servers import new_session, prompt_params, scripted
from .wire import Connection

TIMEOUT = 900.0


@dataclass(slots=True)
class Received:
    """Text chunks received, per session; optionally the text itself, in order."""

    keep_text: bool = False
    chunks: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    chars: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    text: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    first_at: dict[str, int] = field(default_factory=dict)

    def __call__(self, params: dict[str, Any], t_ns: int) -> None:
        update = params.get("update") or {}
        if update.get("sessionUpdate") != "agent_message_chunk":
            return
        sid = params.get("sessionId", "")
        text = (update.get("content") or {}).get("text", "")
        self.chunks[sid] += 1
        self.chars[sid] += len(text)
        self.first_at.setdefault(sid, t_ns)
        if self.keep_text:
            self.text[sid].append(text)


@dataclass(frozen=True, slots=True)
class StreamRun:
    seconds: float
    deltas: int
    chars: int
    chunks: int
    stop_reason: str
    server_cpu: float
    client_cpu: float

    @property
    def rate(self) -> float:
        """Deltas per second, prompt sent → prompt answered (all text precedes the answer)."""
        return self.deltas / self.seconds if self.seconds else 0.0


def repeat_model(count: int, text: str = "x") -> str:
    return scripted({"repeat": {"text": text, "count": count}})


def stream_once(conn: Connection, count: int) -> StreamRun:
    """One prompt on a new session whose model streams ``count`` one-character deltas."""
    sid = new_session(conn, repeat_model(count))
    received = Received()
    conn.on_update = received
    cpu0, reader0 = conn.cpu_seconds(), conn.reader_cpu
    pending = conn.send("session/prompt", prompt_params(sid))
    result = pending.wait(TIMEOUT)
    conn.on_update = None
    return StreamRun(
        seconds=(pending.t_done - pending.t_sent) / 1e9,
        deltas=count,
        chars=received.chars[sid],
        chunks=received.chunks[sid],
        stop_reason=str((result or {}).get("stopReason")),
        server_cpu=conn.cpu_seconds() - cpu0,
        client_cpu=conn.reader_cpu - reader0,
    )
