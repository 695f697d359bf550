"""A recorded session of many requests over the wire, compared message for message.

One script drives real sidecars through most of what the engine does: new sessions,
turns with client tools run in parallel and as barriers, permission allowed and
refused, repeated and invalid calls, the tool budget, exit signals, an unknown tool,
a provider failure, interrupt and cancel (with a tool call open), fork (at a message,
of a running turn here and in another process), compaction (the method and the
``/compact`` and ``/fork`` commands), history, context, load, resume, list,
set_config_option, close, delete, a crash mid-turn repaired by the next sidecar, and
the errors of each. Every message both ways is kept in order, ids and times made
stable, and compared with ``recorded_session.json``: a refactor of the engine that
changes any answer or notification shows here as a diff.

``THREADLINE_RECORD_WRITE=1`` rewrites the recording (only for a deliberate change).
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import RawSidecar

pytestmark = pytest.mark.timeout(120)

RECORDING = Path(__file__).with_name("recorded_session.json")
CWD = "/tmp/threadline-recorded"


def model(*rounds: list[dict[str, Any]], summary: list[dict[str, Any]] | None = None) -> str:
    script: dict[str, Any] = {"rounds": list(rounds)}
    if summary is not None:
        script["summary"] = summary
    return "scripted:" + json.dumps(script)


LOOKUP = {
    "name": "lookup",
    "description": "Look a word up",
    "inputSchema": {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    },
}
APPROVE = {
    "name": "approve_me",
    "description": "Something that needs the user's approval",
    "parallelizable": False,
    "needsApproval": True,
}
DONE = {"name": "task_done", "description": "Say the task is done"}

TOOLS = model(
    [
        {"text": "Looking."},
        {"tool_call": {"name": "lookup", "arguments": {"q": "a"}}},
        {"tool_call": {"name": "lookup", "arguments": {"q": "b"}}},
        {"tool_call": {"name": "approve_me", "arguments": {"x": 1}}},
    ],
    [
        {"tool_call": {"name": "lookup", "arguments": {"q": "a"}}},
        {"tool_call": {"name": "lookup", "arguments": {"wrong": 1}}},
    ],
    [{"thought": "All found.", "signature": "sig"}, {"text": "Done."}],
)
BUDGET = model(
    [
        {"tool_call": {"name": "lookup", "arguments": {"q": "c"}}},
        {"tool_call": {"name": "lookup", "arguments": {"q": "d"}}},
    ],
    [{"text": "unreached"}],
)
EXIT = model([{"text": "Finished."}, {"tool_call": {"name": "task_done", "arguments": {}}}])
UNKNOWN = model([{"text": "Hmm."}, {"tool_call": {"name": "nope", "arguments": {}}}])
FAILING = model([{"text": "Half an answ"}, {"error": {"reason": "overloaded", "message": "busy"}}])
HANG = model([{"thought": "Thinking"}, {"text": "partial "}, {"hang": True}])
HANG_IN_TOOL = model(
    [{"text": "Calling."}, {"tool_call": {"name": "lookup", "arguments": {"q": "slow"}}}],
    [{"text": "never"}],
)
SUMMARIZING = model(
    [{"text": "answer "}, {"text": "number"}],
    summary=[{"text": "Goal: test. Next step: more."}],
)
MEMORY = model(
    [{"tool_call": {"name": "remember", "arguments": {"text": "The user likes tea."}}}],
    [{"text": "Noted."}],
)


class Stable:
    """Makes a message comparable across runs: ids, times, pids and paths."""

    ID = re.compile(r"\b(sess|msg|call|cmp|page|exp|req)_[0-9a-f]{28}\b")
    TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?")

    def __init__(self, home: Path) -> None:
        self.home = str(home)
        self.ids: dict[str, str] = {}
        self.pids: set[str] = set()

    def text(self, s: str) -> str:
        s = s.replace(self.home, "<home>")
        s = self.ID.sub(lambda m: self.ids.setdefault(m[0], f"<{m[1]}#{len(self.ids)}>"), s)
        s = self.TIME.sub("<time>", s)
        s = s.replace(socket.gethostname(), "<host>")
        for pid in self.pids:
            s = re.sub(rf"\bpid {pid}\b", "pid <pid>", s)
        return s

    def __call__(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
        if isinstance(value, list):
            return [self(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
        if key == "pid":
            return "<pid>"
        if isinstance(value, str):
            return self.text(value)
        return value


Answer = Callable[[dict[str, Any]], Any]


class Wire:
    """Several sidecars on one home, every message kept in the order it was seen."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.stable = Stable(home)
        self.log: list[Any] = []
        self.sides: dict[str, RawSidecar] = {}
        self.next_id = 0
        self.answers: dict[str, list[Any]] = {}
        """Replies to the server's requests, by method, taken in order."""
        self.held: list[tuple[str, dict[str, Any]]] = []
        """Server requests left unanswered (a tool call still running)."""

    async def start(self, name: str) -> None:
        side = await RawSidecar.start(self.home)
        self.sides[name] = side
        self.stable.pids.add(str(side.proc.pid))
        await self.call(name, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})

    def kept(self, name: str, way: str, message: dict[str, Any]) -> None:
        stable = self.stable(message)
        listed = stable.get("result")
        if isinstance(listed, dict) and isinstance(listed.get("sessions"), list):
            # Sessions updated in the same millisecond list in either order.
            listed["sessions"].sort(key=lambda s: json.dumps(s, sort_keys=True))  # pyright: ignore[reportUnknownMemberType, reportUnknownLambdaType, reportUnknownArgumentType]
        self.log.append([name, way, stable])

    async def send(self, name: str, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.kept(name, ">", message)
        await self.sides[name].send(message)
        return self.next_id

    async def notify(self, name: str, method: str, params: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        self.kept(name, ">", message)
        await self.sides[name].send(message)

    async def read(self, name: str) -> dict[str, Any]:
        """One message, answering the server's requests as scripted."""
        side = self.sides[name]
        msg = await side.read(30)
        self.kept(name, "<", msg)
        method = msg.get("method")
        if method is not None and "id" in msg:
            queue = self.answers.get(method)
            if not queue:
                self.held.append((name, msg))
            else:
                reply = {"jsonrpc": "2.0", "id": msg["id"], "result": queue.pop(0)}
                self.kept(name, ">", reply)
                await side.send(reply)
        return msg

    async def until(self, name: str, pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while True:
            msg = await self.read(name)
            if pred(msg):
                return msg

    async def answered(self, name: str, *ids: int) -> list[dict[str, Any]]:
        got: dict[int, dict[str, Any]] = {}
        while len(got) < len(ids):
            msg = await self.read(name)
            if "method" not in msg and msg.get("id") in ids:
                got[msg["id"]] = msg
        return [got[i] for i in ids]

    async def call(self, name: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        [reply] = await self.answered(name, await self.send(name, method, params))
        return reply

    async def quiet(self, name: str) -> None:
        """Read what a sidecar sends after its last answer (announcements made
        after a reply), up to a marker request."""
        await self.call(name, "session/list", {"cwd": "/nowhere"})


def prompt(sid: str, text: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


def chunk(msg: dict[str, Any]) -> bool:
    update = msg.get("params", {}).get("update", {})
    return update.get("sessionUpdate") == "agent_message_chunk"


async def new(w: Wire, name: str, **threadline: Any) -> str:
    threadline.setdefault("builtinTools", False)
    reply = await w.call(
        name,
        "session/new",
        {"cwd": CWD, "mcpServers": [], "_meta": {"threadline": threadline}},
    )
    await w.quiet(name)
    return str(reply["result"]["sessionId"])


async def script(w: Wire) -> None:
    await w.start("A")
    lookup = {"content": [{"type": "text", "text": "found it"}]}
    allow = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
    reject = {"outcome": {"outcome": "selected", "optionId": "reject_once"}}

    # Tools: a parallel batch, a barrier that needs permission, a repeat, bad arguments.
    a = await new(w, "A", model=TOOLS, tools=[LOOKUP, APPROVE])
    w.answers = {"tool/call": [lookup] * 3, "session/request_permission": [allow]}
    await w.call("A", "session/prompt", prompt(a, "look up a and b"))
    w.answers = {"tool/call": [lookup] * 3, "session/request_permission": [reject]}
    await w.call("A", "session/prompt", prompt(a, "again, approve it"))
    await w.call("A", "session/history", {"sessionId": a})
    await w.call("A", "session/context", {"sessionId": a})

    # The budget, exit signals, an unknown tool, a failing provider.
    b = await new(w, "A", model=BUDGET, tools=[LOOKUP], toolBudget=1)
    w.answers = {"tool/call": [lookup] * 2}
    await w.call("A", "session/prompt", prompt(b, "two lookups"))
    e = await new(w, "A", model=EXIT, exitTools=[DONE])
    await w.call("A", "session/prompt", prompt(e, "finish"))
    u = await new(w, "A", model=UNKNOWN)
    await w.call("A", "session/prompt", prompt(u, "call something"))
    f = await new(w, "A", model=FAILING)
    await w.call("A", "session/prompt", prompt(f, "fail"))
    await w.call("A", "session/history", {"sessionId": f})

    # Interrupt, fork of a running turn, busy, cancel.
    h = await new(w, "A", model=HANG)
    running = await w.send("A", "session/prompt", prompt(h, "hang"))
    await w.until("A", chunk)
    child = await w.call("A", "session/fork", {"sessionId": h})
    await w.call("A", "session/history", {"sessionId": child["result"]["sessionId"]})
    await w.call("A", "session/prompt", prompt(h, "while busy"))
    await w.call("A", "session/compact", {"sessionId": h})
    stop = await w.send("A", "session/interrupt", {"sessionId": h})
    await w.answered("A", running, stop)
    running = await w.send("A", "session/prompt", prompt(h, "hang again"))
    await w.until("A", chunk)
    await w.notify("A", "session/cancel", {"sessionId": h})
    await w.answered("A", running)
    await w.call("A", "session/interrupt", {"sessionId": h})
    await w.call("A", "session/history", {"sessionId": h})

    # Interrupted while a client tool runs: the open call gets a cancelled result.
    t = await new(w, "A", model=HANG_IN_TOOL, tools=[LOOKUP])
    w.answers = {}
    running = await w.send("A", "session/prompt", prompt(t, "slow lookup"))
    await w.until("A", lambda m: m.get("method") == "tool/call")
    child = await w.call("A", "session/fork", {"sessionId": t})
    await w.call("A", "session/history", {"sessionId": child["result"]["sessionId"]})
    stop = await w.send("A", "session/interrupt", {"sessionId": t})
    await w.answered("A", running, stop)
    w.held.clear()
    await w.call("A", "session/history", {"sessionId": t})

    # Compaction: the method, the commands, nothing to compact; fork at a message.
    c = await new(w, "A", model=SUMMARIZING)
    for i in range(3):
        await w.call("A", "session/prompt", prompt(c, f"question {i} " + "detail " * 40))
    await w.call("A", "session/compact", {"sessionId": c, "keepTurns": 1})
    await w.call("A", "session/compact", {"sessionId": c, "keepTurns": 1})
    await w.call("A", "session/prompt", prompt(c, "question 3"))
    await w.call("A", "session/prompt", prompt(c, "/compact keep the numbers"))
    await w.call("A", "session/prompt", prompt(c, "/fork"))
    history = await w.call("A", "session/history", {"sessionId": c})
    second = history["result"]["messages"][1]["messageId"]
    forked = await w.call("A", "session/fork", {"sessionId": c, "messageId": second})
    await w.call("A", "session/history", {"sessionId": forked["result"]["sessionId"]})
    await w.call("A", "session/prompt", prompt(forked["result"]["sessionId"], "/fork " + second))
    await w.call("A", "session/context", {"sessionId": c})
    await w.call("A", "session/fork", {"sessionId": c, "messageId": "msg_nope"})

    # Memory, options, load, resume, list, close, delete and their errors.
    m = await new(w, "A", model=MEMORY, builtinTools=True)
    await w.call("A", "session/prompt", prompt(m, "remember that I like tea"))
    await w.call(
        "A",
        "session/set_config_option",
        {"sessionId": m, "configId": "builtinTools", "value": False},
    )
    await w.call(
        "A",
        "session/set_config_option",
        {"sessionId": m, "configId": "model", "value": SUMMARIZING},
    )
    await w.call(
        "A",
        "session/set_config_option",
        {"sessionId": m, "configId": "model", "value": "nosuch:model"},
    )
    await w.call(
        "A", "session/set_config_option", {"sessionId": m, "configId": "colour", "value": "red"}
    )
    await w.call(
        "A", "session/set_config_option", {"sessionId": m, "configId": "model", "value": 3}
    )
    await w.call("A", "session/load", {"sessionId": a, "cwd": CWD, "mcpServers": []})
    await w.quiet("A")
    await w.call("A", "session/resume", {"sessionId": c, "cwd": CWD, "mcpServers": []})
    await w.call("A", "session/list", {})
    await w.call("A", "session/list", {"cwd": CWD})
    await w.call("A", "session/list", {"cursor": "page:nope:50"})
    await w.call("A", "session/close", {"sessionId": a})
    await w.call("A", "session/history", {"sessionId": a})
    await w.call("A", "session/delete", {"sessionId": b})
    await w.call("A", "session/history", {"sessionId": b})
    await w.call("A", "session/delete", {"sessionId": b})
    await w.call("A", "session/prompt", prompt("sess_nope", "hello"))
    await w.call(
        "A",
        "session/new",
        {"cwd": CWD, "mcpServers": [], "_meta": {"threadline": {"model": "nosuch:model"}}},
    )
    await w.call(
        "A",
        "session/new",
        {"cwd": CWD, "mcpServers": [], "_meta": {"threadline": {"tools": [LOOKUP, LOOKUP]}}},
    )

    # Another sidecar: a fork of a turn running in A, a refused prompt, an interrupt.
    await w.start("B")
    running = await w.send("A", "session/prompt", prompt(h, "hang once more"))
    await w.until("A", chunk)
    child = await w.call("B", "session/fork", {"sessionId": h})
    await w.call("B", "session/history", {"sessionId": child["result"]["sessionId"]})
    await w.call("B", "session/prompt", prompt(h, "from B"))
    stop = await w.send("B", "session/interrupt", {"sessionId": h})
    await w.answered("A", running)
    await w.answered("B", stop)
    await w.call("B", "session/history", {"sessionId": h})

    # A dies mid-turn with a tool call open; B records what it left on load.
    running = await w.send("A", "session/prompt", prompt(t, "slow lookup again"))
    await w.until("A", lambda m: m.get("method") == "tool/call")
    w.held.clear()
    side = w.sides.pop("A")
    side.proc.kill()
    await side.close()
    await w.call("B", "session/history", {"sessionId": t})
    await w.call("B", "session/load", {"sessionId": t, "cwd": CWD, "mcpServers": []})
    await w.quiet("B")
    await w.call("B", "session/history", {"sessionId": t})


async def test_the_recorded_session_answers_as_recorded(tmp_path: Path) -> None:
    w = Wire(tmp_path / "home")
    try:
        await script(w)
    finally:
        for side in w.sides.values():
            await side.close()
    requests = sum(1 for _, way, m in w.log if way == ">" and "method" in m)
    assert requests >= 30
    if os.environ.get("THREADLINE_RECORD_WRITE"):
        RECORDING.write_text(json.dumps(w.log, indent=1, ensure_ascii=False) + "\n")
    recorded = json.loads(RECORDING.read_text())
    for i, (got, want) in enumerate(zip(w.log, recorded, strict=False)):
        assert got == want, f"message {i} differs"
    assert len(w.log) == len(recorded)
