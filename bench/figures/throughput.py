"""Streaming throughput: 100,000 one-token deltas from the scripted provider, read over stdio.

The bare pygls server and the ACP SDK agent stream the same deltas in the same
notification shape, in the same run, alternating with Threadline rep by rep. Rate is
deltas per second from ``session/prompt`` sent to answered; every character is
counted on arrival (Threadline coalesces deltas into fewer notifications, the peers
send one per delta). Server CPU per delta is given too (it moves less than wall time
when the shared machine is busy), and how busy the server process and the client's
reader thread were: a server near 100% is the limit, not the client.
"""

from __future__ import annotations

from ..context import Context
from ..report import Row, verdict
from ..servers import ACP, PYGLS, THREADLINE, spawn
from ..stats import rate, rate_spread, ratio, summarize
from ..streaming import StreamRun, stream_once

FIGURE = "streaming throughput"


def run(ctx: Context) -> list[Row]:
    count = ctx.n(100_000, 10_000)
    reps = ctx.n(5, 1)
    kinds = tuple(k for k in (THREADLINE, PYGLS, ACP) if k.available)
    conns = {
        k.name: spawn(k, ctx.scratch.home("throughput") if k.threadline else None) for k in kinds
    }
    runs: dict[str, list[StreamRun]] = {k.name: [] for k in (THREADLINE, PYGLS, ACP)}
    try:
        for kind in kinds:  # warm-up: imports on first use, first session
            stream_once(conns[kind.name], min(count, 1000))
        for i in range(reps):
            for kind in kinds:
                runs[kind.name].append(stream_once(conns[kind.name], count))
            ctx.log(f"throughput rep {i + 1}/{reps}")
    finally:
        for c in conns.values():
            c.close()
    s = {name: summarize(r.rate for r in rs) for name, rs in runs.items()}
    tl, pg, acp = s[THREADLINE.name], s[PYGLS.name], s[ACP.name]
    # Ratios rep by rep (same moment of the run), then their median.
    per_rep = summarize(
        a.rate / b.rate for a, b in zip(runs[THREADLINE.name], runs[PYGLS.name], strict=True)
    )
    complete = all(r.chars == r.deltas for rs in runs.values() for r in rs)

    def detail(name: str) -> str:
        rs = runs[name]
        if not rs:
            return "n/a (not run)"
        chunks = summarize(r.chunks for r in rs).p50
        cpu_us = summarize(r.server_cpu / r.deltas * 1e6 for r in rs).p50
        server = summarize(r.server_cpu / r.seconds * 100 for r in rs).p50
        client = summarize(r.client_cpu / r.seconds * 100 for r in rs).p50
        return (
            f"{chunks:,.0f} notifications for {count:,} deltas; server CPU "
            f"{cpu_us:.1f} µs/delta, busy {server:.0f}%; client reader busy {client:.0f}%"
        )

    return [
        Row(
            FIGURE,
            f"Threadline, {count:,} one-char deltas",
            rate(tl.p50, " deltas/s"),
            rate_spread(tl),
            f"{ratio(per_rep.p50)} bare pygls (per-rep {ratio(per_rep.min)}–{ratio(per_rep.max)})"
            f" · {ratio(tl.ratio(acp))} ACP SDK agent",
            "≥ 0.8× bare pygls",
            verdict(per_rep.p50 >= 0.8 and complete),
        ),
        Row(FIGURE, "bare pygls 2 (peer), same deltas", rate(pg.p50, " deltas/s"), rate_spread(pg)),
        Row(
            FIGURE,
            "ACP SDK agent (peer), same deltas",
            rate(acp.p50, " deltas/s"),
            rate_spread(acp),
        ),
        Row(
            FIGURE,
            "detail: Threadline",
            detail(THREADLINE.name),
            "",
            "all text arrived" if complete else "TEXT LOST",
        ),
        Row(FIGURE, "detail: bare pygls", detail(PYGLS.name)),
        Row(FIGURE, "detail: ACP SDK agent", detail(ACP.name)),
    ]
