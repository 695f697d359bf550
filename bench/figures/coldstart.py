"""Cold start: spawn the server → ``initialize`` answered, for Threadline and both peers.

The three servers are started in turn, round after round, so a burst of load on the
shared machine hits all of them alike; one warm-up round (not counted) fills the
page cache. Threadline starts on an existing data folder, as it does in an editor.

Threadline answers ``initialize`` before importing pygls, pydantic and the engine
(``rpc/boot.py``); a client that prompts at once then waits for those imports. So the
same rounds also time spawn → first prompt answered (``initialize``, ``session/new``,
``session/prompt`` sent as soon as each answer arrives) against the same server with
everything imported first (``peers/threadline_eager.py``, the order before the boot
path), which must not be faster.
"""

from __future__ import annotations

from ..context import Context
from ..report import Row, verdict
from ..servers import (
    ACP,
    INITIALIZE,
    PYGLS,
    THREADLINE,
    THREADLINE_EAGER,
    ServerKind,
    new_session,
    prompt_params,
    scripted,
    spawn,
)
from ..stats import Summary, ms, ms_spread, ratio, summarize

FIGURE = "cold start"


def _once(kind: ServerKind, ctx: Context, home_label: str) -> float:
    home = ctx.scratch.root / home_label if kind.threadline else None
    if home is not None:
        home.mkdir(exist_ok=True)
    conn = spawn(kind, home, initialize=False)
    try:
        pending = conn.send("initialize", INITIALIZE)
        pending.wait(60)
        return (pending.t_done - conn.t_spawn) / 1e6
    finally:
        conn.close()


FIRST_PROMPT_MODEL = scripted({"text": "hello"})


def _first_prompt(kind: ServerKind, ctx: Context) -> tuple[float, float]:
    """(spawn → initialize answered, spawn → first prompt answered), in ms."""
    home = ctx.scratch.root / "coldstart-home"
    home.mkdir(exist_ok=True)
    conn = spawn(kind, home, initialize=False)
    try:
        init = conn.send("initialize", INITIALIZE)
        init.wait(60)
        session = new_session(conn, FIRST_PROMPT_MODEL)
        prompt = conn.send("session/prompt", prompt_params(session))
        prompt.wait(60)
        return (init.t_done - conn.t_spawn) / 1e6, (prompt.t_done - conn.t_spawn) / 1e6
    finally:
        conn.close()


def run(ctx: Context) -> list[Row]:
    rounds = ctx.n(20, 2)
    kinds = tuple(k for k in (THREADLINE, PYGLS, ACP) if k.available)
    samples: dict[str, list[float]] = {k.name: [] for k in (THREADLINE, PYGLS, ACP)}
    firsts: dict[str, tuple[list[float], list[float]]] = {
        k.name: ([], []) for k in (THREADLINE, THREADLINE_EAGER)
    }
    for kind in kinds:
        _once(kind, ctx, "coldstart-home")
    for kind in (THREADLINE, THREADLINE_EAGER):
        _first_prompt(kind, ctx)
    for i in range(rounds):
        for kind in kinds:
            samples[kind.name].append(_once(kind, ctx, "coldstart-home"))
        for kind in (THREADLINE, THREADLINE_EAGER):
            init, first = _first_prompt(kind, ctx)
            firsts[kind.name][0].append(init)
            firsts[kind.name][1].append(first)
        ctx.log(f"cold start round {i + 1}/{rounds}")
    s: dict[str, Summary] = {name: summarize(v) for name, v in samples.items()}
    tl, pg, acp = s[THREADLINE.name], s[PYGLS.name], s[ACP.name]
    vs_pygls, vs_acp = tl.ratio(pg), tl.ratio(acp)
    init_now, first_now = (summarize(v) for v in firsts[THREADLINE.name])
    init_eager, first_eager = (summarize(v) for v in firsts[THREADLINE_EAGER.name])
    first_vs = first_now.ratio(first_eager)
    return [
        Row(
            FIGURE,
            "`threadline serve` → initialize answered",
            ms(tl.p50),
            ms_spread(tl),
            f"{ratio(vs_pygls)} bare pygls · {ratio(vs_acp)} ACP SDK agent",
            "≤ 1.0× bare pygls and < ACP SDK agent",
            verdict(vs_pygls <= 1.0 and (vs_acp < 1.0 or not ACP.available)),
        ),
        Row(FIGURE, "bare pygls 2 JsonRPCServer (peer)", ms(pg.p50), ms_spread(pg)),
        Row(
            FIGURE,
            "minimal ACP SDK agent (peer)",
            ms(acp.p50) if ACP.available else "n/a (agent-client-protocol not installed)",
            ms_spread(acp) if ACP.available else "",
        ),
        Row(
            FIGURE,
            "spawn → first prompt answered (initialize, session/new, prompt at once)",
            ms(first_now.p50),
            ms_spread(first_now),
            f"{ratio(first_vs)} the same server importing everything before initialize "
            f"({ms(first_eager.p50)}; its initialize {ms(init_eager.p50)}, "
            f"this one's {ms(init_now.p50)})",
            "not slower than importing first (≤ 1.05×, the noise of one rep)",
            verdict(first_vs <= 1.05),
        ),
    ]
