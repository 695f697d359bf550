"""Interrupt latency: ``session/interrupt`` sent → the prompt answered ``cancelled``.

Two cases, 50 interrupts each, every one on a fresh session:

* while streaming: the model streams without end; the interrupt is sent once text is
  arriving (after a varying 0-20 ms more), so it lands at different points of a burst;
* while a tool ignores cancellation: the model calls a client tool declared in
  ``_meta.threadline.tools`` whose ``tool/call`` the client never answers; the
  interrupt is sent once that request has arrived.

The time to the ``session/interrupt`` answer itself is shown as well (the contract
answers it only after the prompt).
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from ..context import Context
from ..report import Row, verdict
from ..servers import THREADLINE, new_session, prompt_params, scripted, spawn
from ..stats import Summary, ms, summarize
from ..wire import NO_REPLY, Connection

FIGURE = "interrupt latency"
ENDLESS = {"repeat": {"text": "x", "count": 10**12}}
STALL_TOOL = {
    "name": "stall",
    "description": "A client tool that never answers.",
    "inputSchema": {"type": "object", "properties": {}},
}
TOOL_SCRIPT = [[{"tool_call": {"name": "stall", "arguments": {}}}], [{"text": "done"}]]


def _interrupt(conn: Connection, sid: str, prompt_sent: Any) -> tuple[float, float, str]:
    """Interrupt now; (ms to the prompt's answer, ms to the interrupt's answer, stopReason)."""
    pending = conn.send("session/interrupt", {"sessionId": sid})
    result = prompt_sent.wait(30)
    pending.wait(30)
    return (
        (prompt_sent.t_done - pending.t_sent) / 1e6,
        (pending.t_done - pending.t_sent) / 1e6,
        str((result or {}).get("stopReason")),
    )


def _while_streaming(conn: Connection, rng: random.Random) -> tuple[float, float, str]:
    sid = new_session(conn, scripted(ENDLESS))
    started = threading.Event()
    conn.on_update = lambda params, t: started.set()
    prompt = conn.send("session/prompt", prompt_params(sid))
    if not started.wait(30):
        raise TimeoutError("no text streamed within 30 s")
    time.sleep(rng.uniform(0, 0.02))
    out = _interrupt(conn, sid, prompt)
    conn.on_update = None
    return out


def _while_tool_hangs(conn: Connection) -> tuple[float, float, str]:
    sid = new_session(conn, scripted(rounds=TOOL_SCRIPT), tools=[STALL_TOOL])
    called = threading.Event()

    def never_answer(params: dict[str, Any], t: int) -> object:
        called.set()
        return NO_REPLY

    conn.on_request["tool/call"] = never_answer
    prompt = conn.send("session/prompt", prompt_params(sid))
    if not called.wait(30):
        raise TimeoutError("the tool was not called within 30 s")
    return _interrupt(conn, sid, prompt)


def _rows(case: str, runs: list[tuple[float, float, str]]) -> list[Row]:
    prompt_ms = summarize(r[0] for r in runs)
    answer_ms = summarize(r[1] for r in runs)
    cancelled = sum(r[2] == "cancelled" for r in runs)
    spread = _spread(prompt_ms)
    return [
        Row(
            FIGURE,
            f"{case}: interrupt → prompt answered",
            ms(prompt_ms.p50),
            spread,
            f"{cancelled}/{len(runs)} answered `cancelled`",
            "p99 < 50 ms",
            verdict(prompt_ms.p99 < 50 and cancelled == len(runs)),
        ),
        Row(
            FIGURE, f"{case}: interrupt → interrupt answered", ms(answer_ms.p50), _spread(answer_ms)
        ),
    ]


def _spread(s: Summary) -> str:
    return f"p99 {ms(s.p99)} · {ms(s.min)}–{ms(s.max)} (n={s.n})"


def run(ctx: Context) -> list[Row]:
    n = ctx.n(50, 10)
    rng = random.Random(8)
    conn = spawn(THREADLINE, ctx.scratch.home("interrupt"))
    try:
        _while_streaming(conn, rng)  # warm-up
        streaming = [_while_streaming(conn, rng) for _ in range(n)]
        ctx.log("interrupt: while streaming done")
        _while_tool_hangs(conn)
        tool = [_while_tool_hangs(conn) for _ in range(n)]
        ctx.log("interrupt: while a tool hangs done")
    finally:
        conn.close()
    return _rows("while streaming", streaming) + _rows("while a tool ignores cancellation", tool)
