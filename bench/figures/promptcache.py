"""The local model's context kept warm (issue 31): time to first token through the
sidecar, as a session grows, while two sessions are prompted in turn (two editor tabs),
and for a fork; for the embedded model and for the shared model server.

The default model (SmolLM2-135M, in process), built-in tools off, a system prompt,
greedy, 8-token answers; time to first token is ``session/prompt`` sent → the first
``agent_message_chunk`` read. Three sessions (one in the smoke run) are prompted 8
times each, one after the other (turn 1 and turn 8: the medians over them); then two
sessions A and B alternately (A1 B1 A2 B2 …); then a session of 4 turns is forked and
the fork's first turn is compared with its parent's next one (three times, the fork
taken again after each parent turn, which goes first alternating; medians). Every
session asks its own questions.
The same-run peer is the same sidecar with the prompt cache off
(``THREADLINE_PROMPT_CACHE_MB=0``: llama.cpp keeps only the last prompt evaluated),
doing the same.

The shared model server: the same GGUF run by the keeper's ``llama_cpp.server`` (one
thread, the embedded model's context size), its sessions' prompts kept by
``warmserver`` (``prompt_cache_mb`` at its default); the peer is the same entry with
``prompt_cache_mb = 0`` (plain ``llama_cpp.server``: the last prompt only). One
sidecar each, the same cases; then the same cases again with a pause of `PAUSE` before
each prompt, as a user reading the answer and typing takes (longer): the server
evaluates the next turn's opening after each answer (``ahead``), and with prompts sent
back to back that overlaps only the ~25 ms between an answer's end and the next
request.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

from threadline.providers.local import find_model_path
from threadline.providers.local.model import DEFAULT_N_CTX, DEFAULT_N_THREADS
from threadline.providers.modelserver.home import all_servers
from threadline.providers.modelserver.launcher import stop

from ..context import Context
from ..report import Row, verdict
from ..servers import THREADLINE, new_session, prompt_params, spawn
from ..stats import ms, ratio, summarize
from ..wire import Connection

FIGURE = "local model warm context"
SERVER_FIGURE = "shared model server warm context"
SYSTEM = "You are a helpful assistant. Answer in one short sentence."
TURNS = 8
PAUSE = 1.0
"""Seconds before each prompt in the shared server's second pass."""


def ask(who: str, i: int) -> str:
    """Turn ``i``'s question for session ``who``. Each session asks its own: with the
    same questions (greedy, so the same answers) a later session's prompts were the
    earlier one's, its turns found them kept and evaluated nothing (session A's
    50–210 ms in the run of 2026-11-26 15:00)."""
    return f"{who}, question {i}: say something true about the number {i} and a colour you like."


def _session(conn: Connection, model: str | None) -> str:
    return new_session(
        conn, model, systemPrompt=SYSTEM, maxTokens=8, temperature=0.0, builtinTools=False
    )


def _ttft(conn: Connection, sid: str, text: str, pause: float = 0.0) -> float:
    """ms from the prompt sent (``pause`` seconds from now) to its first answer chunk
    read; waits for the answer."""
    time.sleep(pause)
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


def _cases(
    conn: Connection, alone: int, model: str | None = None, pause: float = 0.0
) -> dict[str, list[float]]:
    """``alone`` sessions of ``TURNS`` turns one after the other (``alone{k}``), then
    A and B alternately, then a fork and its parent; ``pause`` seconds before each
    prompt. A pass with pauses asks its own questions (not the kept prompts of the
    pass before it on the same server)."""
    out: dict[str, list[float]] = {}
    tag = "Later " if pause else ""
    for k in range(alone):
        one = _session(conn, model)
        asks = [ask(f"{tag}Alone {k}", i) for i in range(TURNS)]
        out[f"alone{k}"] = [_ttft(conn, one, text, pause) for text in asks]
    a, b = _session(conn, model), _session(conn, model)
    out["A"], out["B"] = [], []
    for i in range(TURNS):
        out["A"].append(_ttft(conn, a, ask(f"{tag}Tab A", i), pause))
        out["B"].append(_ttft(conn, b, ask(f"{tag}Tab B", i), pause))
    parent = _session(conn, model)
    for i in range(4):
        _ttft(conn, parent, ask(f"{tag}Parent", i), pause)
    out["fork"], out["parent"] = [], []
    for k in range(alone):  # a fork and its parent's next turn; again from there
        child = str(conn.call("session/fork", {"sessionId": parent})["sessionId"])
        # Whichever goes first also evaluates the end of the last answer as rendered
        # ("<|im_end|>", "<|im_start|>user"), which the other then finds evaluated;
        # so the order alternates (the fork first in the smoke run).
        order = [("fork", child, "Fork"), ("parent", parent, "Parent")]
        for key, sid, who in order if k % 2 == 0 else order[::-1]:
            out[key].append(_ttft(conn, sid, ask(tag + who, 4 + k), pause))
    return out


def run(ctx: Context) -> list[Row]:
    alone = ctx.n(3, 1)
    return _embedded(ctx, alone) + _shared(ctx, alone)


def _embedded(ctx: Context, alone: int) -> list[Row]:
    cached = spawn(THREADLINE, ctx.scratch.home("promptcache"))
    plain = spawn(
        THREADLINE, ctx.scratch.home("promptcache-off"), env={"THREADLINE_PROMPT_CACHE_MB": "0"}
    )
    try:
        for conn in (cached, plain):  # load the model
            _ttft(conn, _session(conn, None), "Hello.")
        t0 = time.monotonic()
        on = _cases(cached, alone)
        ctx.log(f"promptcache: cache on in {time.monotonic() - t0:.0f} s")
        off = _cases(plain, alone)
    finally:
        cached.close()
        plain.close()
    return _rows(FIGURE, on, off)


def _config(home: Path, cache_mb: int | None) -> dict[str, str]:
    """A ``shared`` model entry on the keeper's server, in ``home``."""
    path = home / "threadline.toml"
    path.write_text(
        "[models.shared]\n"
        f'gguf = "{find_model_path()}"\n'
        f"threads = {DEFAULT_N_THREADS}\n"
        f"context_window = {DEFAULT_N_CTX}\n"
        + (f"prompt_cache_mb = {cache_mb}\n" if cache_mb is not None else "")
    )
    return {"THREADLINE_CONFIG": str(path)}


def _shared(ctx: Context, alone: int) -> list[Row]:
    homes = [ctx.scratch.home("promptcache-server"), ctx.scratch.home("promptcache-server-off")]
    conns = [
        spawn(THREADLINE, h, env=_config(h, mb)) for h, mb in zip(homes, (None, 0), strict=True)
    ]
    paused_on: dict[str, list[float]] = {}
    paused_off: dict[str, list[float]] = {}
    try:
        for conn in conns:  # start the server, load the model
            _ttft(conn, _session(conn, "shared"), "Hello.")
        t0 = time.monotonic()
        on = _cases(conns[0], alone, "shared")
        ctx.log(f"promptcache: shared server, cache on in {time.monotonic() - t0:.0f} s")
        off = _cases(conns[1], alone, "shared")
        if not ctx.quick:  # (not in the CI's smoke run: a minute of pauses)
            t0 = time.monotonic()
            paused_on = _cases(conns[0], alone, "shared", PAUSE)
            ctx.log(f"promptcache: shared server, pauses, {time.monotonic() - t0:.0f} s")
            paused_off = _cases(conns[1], alone, "shared", PAUSE)
    finally:
        for conn in conns:
            conn.close()
        for h in (s for home in homes for s in all_servers(home)):
            if not stop(h):
                print(f"promptcache: keeper of {h.folder} did not stop", file=sys.stderr)
    rows = _rows(SERVER_FIGURE, on, off)
    if not ctx.quick:
        rows += _rows(f"{SERVER_FIGURE}, {PAUSE:g} s before each prompt", paused_on, paused_off)
    return rows


def _rows(figure: str, on: dict[str, list[float]], off: dict[str, list[float]]) -> list[Row]:
    def solos(r: dict[str, list[float]]) -> list[list[float]]:
        return [v for k, v in r.items() if k.startswith("alone")]

    def turn(r: dict[str, list[float]], i: int) -> float:
        """Turn ``i``'s time to first token, the median over the sessions alone."""
        return summarize([s[i] for s in solos(r)]).p50

    def later(r: dict[str, list[float]], key: str) -> float:
        # turns 2.. (turn 1 evaluates a new session)
        rest = [v for s in solos(r) for v in s[1:]] if key == "alone" else r[key][1:]
        return summarize(rest).p50

    rows: list[Row] = []
    growth = turn(on, -1) / turn(on, 0)
    rows.append(
        Row(
            figure,
            f"one session: time to first token at turn {TURNS} vs turn 1",
            f"{ms(turn(on, -1))} vs {ms(turn(on, 0))}",
            "; ".join("turns: " + ", ".join(ms(v) for v in s) for s in solos(on)),
            f"{ratio(growth)} turn 1 (median of {len(solos(on))} session(s)); cache off: "
            f"{ratio(turn(off, -1) / turn(off, 0))}",
            "≤ 1.2× turn 1",
            verdict(growth <= 1.2),
        )
    )
    alternating = summarize(on["A"][1:] + on["B"][1:]).p50
    alone = later(on, "alone")
    off_alternating = summarize(off["A"][1:] + off["B"][1:]).p50
    rows.append(
        Row(
            figure,
            "two sessions prompted alternately: time to first token, turns 2–8",
            ms(alternating),
            "A: " + ", ".join(ms(v) for v in on["A"]) + "; B: " + ", ".join(ms(v) for v in on["B"]),
            f"{ratio(alternating / alone)} one session alone ({ms(alone)}); cache off: "
            f"{ms(off_alternating)}, {ratio(off_alternating / later(off, 'alone'))} alone",
            "≤ 1.5× one session alone",
            verdict(alternating / alone <= 1.5),
        )
    )
    fork, parent = summarize(on["fork"]).p50, summarize(on["parent"]).p50
    off_fork, off_parent = summarize(off["fork"]).p50, summarize(off["parent"]).p50
    rows.append(
        Row(
            figure,
            "a fork's first turn vs its parent's next turn (after 4 turns)",
            f"{ms(fork)} vs {ms(parent)}",
            "forks: "
            + ", ".join(ms(v) for v in on["fork"])
            + "; parent: "
            + ", ".join(ms(v) for v in on["parent"]),
            f"{ratio(fork / parent)} parent; cache off: {ms(off_fork)} vs "
            f"{ms(off_parent)} ({ratio(off_fork / off_parent)})",
            "≤ 1.2× the parent's",
            verdict(fork / parent <= 1.2),
        )
    )
    return rows
