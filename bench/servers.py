"""The servers under test and how to start them: Threadline and its two peers.

Every Threadline started here gets a temp ``THREADLINE_HOME`` of its own. The peers
(a bare pygls 2 server and a minimal ACP SDK agent, in ``bench/peers/``) understand
just enough of the same requests (``initialize``, ``session/new`` with a scripted
model, ``session/prompt``) that the bench sends all three the very same bytes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .wire import Connection, Framing

PEERS = Path(__file__).resolve().parent / "peers"

INITIALIZE: dict[str, Any] = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
    "clientInfo": {"name": "threadline-bench", "version": "0.1.0"},
}


@dataclass(frozen=True, slots=True)
class ServerKind:
    """How to start one server under test, and the framing it speaks."""

    name: str
    argv: tuple[str, ...]
    framing: Framing
    threadline: bool = False
    needs: str | None = None
    """A module the server imports that may not be installed (the ACP SDK)."""

    @property
    def available(self) -> bool:
        return self.needs is None or importlib.util.find_spec(self.needs) is not None


def threadline_argv() -> tuple[str, ...]:
    """``threadline serve`` from the same environment as this interpreter."""
    script = Path(sys.executable).parent / "threadline"
    if script.exists():
        return (str(script), "serve")
    found = shutil.which("threadline")
    if found:
        return (found, "serve")
    return (sys.executable, "-m", "threadline", "serve")


THREADLINE = ServerKind("threadline", threadline_argv(), "headers", threadline=True)
THREADLINE_STAMPED = ServerKind(
    "threadline", (sys.executable, str(PEERS / "threadline_stamped.py")), "headers", True
)
THREADLINE_EAGER = ServerKind(
    "threadline (imports before initialize)",
    (sys.executable, str(PEERS / "threadline_eager.py")),
    "headers",
    threadline=True,
)
THREADLINE_UNCACHED = ServerKind(
    "threadline (without the long-session caches)",
    (sys.executable, str(PEERS / "threadline_uncached.py")),
    "headers",
    threadline=True,
)
PYGLS = ServerKind("bare pygls 2", (sys.executable, str(PEERS / "pygls_server.py")), "headers")
PYGLS_STAMPED = ServerKind(
    "bare pygls 2", (sys.executable, str(PEERS / "pygls_server.py"), "--stamp"), "headers"
)
ACP = ServerKind(
    "ACP SDK agent", (sys.executable, str(PEERS / "acp_agent.py")), "lines", needs="acp"
)


class Scratch:
    """A temp folder for one bench run: homes, logs, fixtures. Removed at the end."""

    def __init__(self, keep: bool = False) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="threadline-bench-"))
        self.keep = keep
        self._n = 0

    def home(self, label: str) -> Path:
        self._n += 1
        path = self.root / f"{self._n:03d}-{label}"
        path.mkdir(parents=True)
        return path

    def cleanup(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def spawn(
    kind: ServerKind,
    home: Path | None = None,
    *,
    initialize: bool = True,
    env: dict[str, str] | None = None,
) -> Connection:
    """Start a server (Threadline with ``home`` as its data folder) and initialize it."""
    env = {**os.environ, **(env or {})}
    stderr = None
    if home is not None:
        env["THREADLINE_HOME"] = str(home)
        stderr = home / "stderr.log"
    conn = Connection(kind.argv, env=env, framing=kind.framing, stderr=stderr)
    if initialize:
        conn.call("initialize", INITIALIZE, timeout=60)
    return conn


def scripted(*steps: dict[str, Any], rounds: list[list[dict[str, Any]]] | None = None) -> str:
    """A ``scripted:<json>`` model string: one round of ``steps`` (or explicit rounds)."""
    return "scripted:" + json.dumps({"rounds": rounds if rounds is not None else [list(steps)]})


def new_session(conn: Connection, model: str | None = None, **threadline: Any) -> str:
    if model is not None:
        threadline["model"] = model
    params: dict[str, Any] = {"cwd": "/tmp", "mcpServers": []}
    if threadline:
        params["_meta"] = {"threadline": threadline}
    return str(conn.call("session/new", params)["sessionId"])


def prompt_params(session_id: str, text: str = "go") -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


@dataclass(frozen=True)
class Answer:
    text: str
    result: dict[str, Any]
    seconds: float


def answer(conn: Connection, session_id: str, text: str) -> Answer:
    """One prompt answered: the text streamed as agent message chunks, the result, and
    the time from sending to the result."""
    parts: list[str] = []

    def chunk(params: dict[str, Any], _t: int) -> None:
        update = params.get("update") or {}
        if update.get("sessionUpdate") == "agent_message_chunk":
            parts.append(update.get("content", {}).get("text", ""))

    conn.on_update = chunk
    try:
        pending = conn.send("session/prompt", prompt_params(session_id, text))
        result = pending.wait(600)
    finally:
        conn.on_update = None
    return Answer("".join(parts), result or {}, pending.ms / 1000)
