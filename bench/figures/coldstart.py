"""Cold start: spawn the server → ``initialize`` answered, for Threadline and both peers.

The three servers are started in turn, round after round, so a burst of load on the
shared machine hits all of them alike; one warm-up round (not counted) fills the
page cache. Threadline starts on an existing data folder, as it does in an editor.
"""

from __future__ import annotations

from ..context import Context
from ..report import Row, verdict
from ..servers import ACP, INITIALIZE, PYGLS, THREADLINE, ServerKind, spawn
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


def run(ctx: Context) -> list[Row]:
    rounds = ctx.n(20, 2)
    kinds = tuple(k for k in (THREADLINE, PYGLS, ACP) if k.available)
    samples: dict[str, list[float]] = {k.name: [] for k in (THREADLINE, PYGLS, ACP)}
    for kind in kinds:
        _once(kind, ctx, "coldstart-home")
    for i in range(rounds):
        for kind in kinds:
            samples[kind.name].append(_once(kind, ctx, "coldstart-home"))
        ctx.log(f"cold start round {i + 1}/{rounds}")
    s: dict[str, Summary] = {name: summarize(v) for name, v in samples.items()}
    tl, pg, acp = s[THREADLINE.name], s[PYGLS.name], s[ACP.name]
    vs_pygls, vs_acp = tl.ratio(pg), tl.ratio(acp)
    return [
        Row(
            FIGURE,
            "`threadline serve` → initialize answered",
            ms(tl.p50),
            ms_spread(tl),
            f"{ratio(vs_pygls)} bare pygls · {ratio(vs_acp)} ACP SDK agent",
            "≤ 1.2× bare pygls and < ACP SDK agent",
            verdict(vs_pygls <= 1.2 and (vs_acp < 1.0 or not ACP.available)),
        ),
        Row(FIGURE, "bare pygls 2 JsonRPCServer (peer)", ms(pg.p50), ms_spread(pg)),
        Row(
            FIGURE,
            "minimal ACP SDK agent (peer)",
            ms(acp.p50) if ACP.available else "n/a (agent-client-protocol not installed)",
            ms_spread(acp) if ACP.available else "",
        ),
    ]
