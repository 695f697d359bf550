"""The embedded model's context kept warm (issue 31): time to first token through the
sidecar, as a session grows, while two sessions are prompted in turn (two editor tabs),
and for a fork.

The default model (SmolLM2-135M, in process), built-in tools off, a system prompt,
greedy, 8-token answers; time to first token is ``session/prompt`` sent → the first
``agent_message_chunk`` read. One session is prompted 8 times; then two sessions A
and B alternately (A1 B1 A2 B2 …); then a session of 4 turns is forked and the fork's
first turn is compared with its parent's next one. The same-run peer is the same
sidecar with the prompt cache off (``THREADLINE_PROMPT_CACHE_MB=0``: llama.cpp keeps
only the last prompt evaluated), doing the same, alternating case by case.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..context import Context
from ..report import Row, verdict
from ..servers import THREADLINE, new_session, prompt_params, spawn
from ..stats import ms, ratio, summarize
from ..wire import Connection

FIGURE = "local model warm context"
SYSTEM = "You are a helpful assistant. Answer in one short sentence."
TURNS = 8
QUESTIONS = [
    f"Question {i}: say something true about the number {i} and a colour you like."
    for i in range(2 * TURNS + 4)
]


def _session(conn: Connection) -> str:
    return new_session(conn, systemPrompt=SYSTEM, maxTokens=8, temperature=0.0, builtinTools=False)


def _ttft(conn: Connection, sid: str, text: str) -> float:
    """ms from the prompt sent to its first answer chunk read; waits for the answer."""
    first: list[int] = []
    seen = threading.Event()

    def chunk(params: dict[str, Any], t: int) -> None:
        update = params.get("update") or {}
        mine = params.get("sessionId") == sid
        if mine and update.get("sessionUpdate") == "agent_message_chunk" and not first:
            first.append(t)
            seen.set()

    conn.on_update = chunk
    try:
        pending = conn.send("session/prompt", prompt_params(sid, text))
        pending.wait(600)
    finally:
        conn.on_update = None
    if not first:
        return float("nan")
    return (first[0] - pending.t_sent) / 1e6


def _cases(conn: Connection) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    one = _session(conn)
    out["alone"] = [_ttft(conn, one, QUESTIONS[i]) for i in range(TURNS)]
    a, b = _session(conn), _session(conn)
    out["A"], out["B"] = [], []
    for i in range(TURNS):
        out["A"].append(_ttft(conn, a, QUESTIONS[i]))
        out["B"].append(_ttft(conn, b, QUESTIONS[TURNS + i]))
    parent = _session(conn)
    for i in range(4):
        _ttft(conn, parent, QUESTIONS[i])
    child = str(conn.call("session/fork", {"sessionId": parent})["sessionId"])
    out["fork"] = [_ttft(conn, child, QUESTIONS[2 * TURNS])]
    out["parent"] = [_ttft(conn, parent, QUESTIONS[2 * TURNS + 1])]
    return out


def run(ctx: Context) -> list[Row]:
    cached = spawn(THREADLINE, ctx.scratch.home("promptcache"))
    plain = spawn(
        THREADLINE, ctx.scratch.home("promptcache-off"), env={"THREADLINE_PROMPT_CACHE_MB": "0"}
    )
    try:
        for conn in (cached, plain):  # load the model
            _ttft(conn, _session(conn), "Hello.")
        t0 = time.monotonic()
        on = _cases(cached)
        ctx.log(f"promptcache: cache on in {time.monotonic() - t0:.0f} s")
        off = _cases(plain)
    finally:
        cached.close()
        plain.close()
    return _rows(on, off)


def _rows(on: dict[str, list[float]], off: dict[str, list[float]]) -> list[Row]:
    def later(r: dict[str, list[float]], key: str) -> float:
        return summarize(r[key][1:]).p50  # turns 2.. (turn 1 evaluates a new session)

    rows: list[Row] = []
    growth = on["alone"][-1] / on["alone"][0]
    rows.append(
        Row(
            FIGURE,
            f"one session: time to first token at turn {TURNS} vs turn 1",
            f"{ms(on['alone'][-1])} vs {ms(on['alone'][0])}",
            "turns: " + ", ".join(ms(v) for v in on["alone"]),
            f"{ratio(growth)} turn 1; cache off: {ratio(off['alone'][-1] / off['alone'][0])}",
            "≤ 1.2× turn 1",
            verdict(growth <= 1.2),
        )
    )
    alternating = summarize(on["A"][1:] + on["B"][1:]).p50
    alone = later(on, "alone")
    off_alternating = summarize(off["A"][1:] + off["B"][1:]).p50
    rows.append(
        Row(
            FIGURE,
            "two sessions prompted alternately: time to first token, turns 2–8",
            ms(alternating),
            "A: " + ", ".join(ms(v) for v in on["A"]) + "; B: " + ", ".join(ms(v) for v in on["B"]),
            f"{ratio(alternating / alone)} one session alone ({ms(alone)}); cache off: "
            f"{ms(off_alternating)}, {ratio(off_alternating / later(off, 'alone'))} alone",
            "≤ 1.5× one session alone",
            verdict(alternating / alone <= 1.5),
        )
    )
    fork, parent = on["fork"][0], on["parent"][0]
    rows.append(
        Row(
            FIGURE,
            "a fork's first turn vs its parent's next turn (after 4 turns)",
            f"{ms(fork)} vs {ms(parent)}",
            "",
            f"{ratio(fork / parent)} parent; cache off: {ms(off['fork'][0])} vs "
            f"{ms(off['parent'][0])} ({ratio(off['fork'][0] / off['parent'][0])})",
            "≤ 1.2× the parent's",
            verdict(fork / parent <= 1.2),
        )
    )
    return rows
