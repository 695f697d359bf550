"""Added latency per delta: the provider yields a delta → the client has parsed it.

Each delta's text is the ``perf_counter_ns`` at which the provider produced it
(``peers/threadline_stamped.py`` for Threadline, ``--stamp`` for the peers); the
client subtracts it from its own clock on arrival. The main case spaces deltas
2 ms apart (a fast model's pace), so each travels alone; a second case streams
10,000 back-to-back, where a delta waits behind the ones before it.
"""

from __future__ import annotations

from typing import Any

from ..context import Context
from ..report import Row, verdict
from ..servers import (
    ACP,
    PYGLS_STAMPED,
    THREADLINE_STAMPED,
    ServerKind,
    new_session,
    prompt_params,
    scripted,
    spawn,
)
from ..stats import Summary, ms, ratio, summarize
from ..wire import Connection

FIGURE = "added latency per delta"
GAP_S = 0.002


class _Latencies:
    def __init__(self) -> None:
        self.ms: list[float] = []

    def __call__(self, params: dict[str, Any], t_ns: int) -> None:
        update = params.get("update") or {}
        if update.get("sessionUpdate") != "agent_message_chunk":
            return
        text = (update.get("content") or {}).get("text", "")
        for stamp in text.split(";"):
            if stamp:
                self.ms.append((t_ns - int(stamp)) / 1e6)


def _measure(conn: Connection, steps: list[dict[str, Any]]) -> list[float]:
    sid = new_session(conn, scripted(*steps))
    lat = _Latencies()
    conn.on_update = lat
    conn.send("session/prompt", prompt_params(sid)).wait(600)
    conn.on_update = None
    return lat.ms


def _spread(s: Summary) -> str:
    return f"p90 {ms(s.p90)} · p99 {ms(s.p99)} · max {ms(s.max)} (n={s.n})"


def run(ctx: Context) -> list[Row]:
    n = ctx.n(1000, 200)
    burst = ctx.n(10_000, 2_000)
    spaced = [s for _ in range(n) for s in ({"sleep": GAP_S}, {"text": "t"})]
    acp_stamped = ServerKind(ACP.name, (*ACP.argv, "--stamp"), ACP.framing, needs=ACP.needs)
    kinds = tuple(k for k in (THREADLINE_STAMPED, PYGLS_STAMPED, acp_stamped) if k.available)
    conns = {k.name: spawn(k, ctx.scratch.home("latency") if k.threadline else None) for k in kinds}
    every = (THREADLINE_STAMPED, PYGLS_STAMPED, acp_stamped)
    spaced_ms: dict[str, list[float]] = {k.name: [] for k in every}
    burst_ms: dict[str, list[float]] = {k.name: [] for k in every}
    try:
        for kind in kinds:
            _measure(conns[kind.name], spaced[:20])  # warm-up
        for half in (spaced[: len(spaced) // 2], spaced[len(spaced) // 2 :]):
            for kind in kinds:
                spaced_ms[kind.name] += _measure(conns[kind.name], half)
        ctx.log("latency: spaced deltas done")
        for kind in kinds:
            burst_ms[kind.name] += _measure(
                conns[kind.name], [{"repeat": {"text": "t", "count": burst}}]
            )
        ctx.log("latency: burst done")
    finally:
        for c in conns.values():
            c.close()
    tl, pg, acp = (summarize(spaced_ms[k.name]) for k in every)
    btl, bpg, bacp = (summarize(burst_ms[k.name]) for k in every)
    return [
        Row(
            FIGURE,
            f"Threadline, deltas {GAP_S * 1000:g} ms apart",
            ms(tl.p50),
            _spread(tl),
            f"p50 {ratio(tl.ratio(pg))} bare pygls · {ratio(tl.ratio(acp))} ACP SDK agent",
            "p50 < 1 ms, p99 < 5 ms",
            verdict(tl.p50 < 1 and tl.p99 < 5 and tl.n == n),
        ),
        Row(FIGURE, "bare pygls 2 (peer), same", ms(pg.p50), _spread(pg)),
        Row(FIGURE, "ACP SDK agent (peer), same", ms(acp.p50), _spread(acp)),
        Row(
            FIGURE,
            f"Threadline, {burst:,} back-to-back deltas (queueing included)",
            ms(btl.p50),
            _spread(btl),
            f"p50 {ratio(btl.ratio(bpg))} bare pygls · {ratio(btl.ratio(bacp))} ACP SDK agent",
        ),
        Row(FIGURE, "bare pygls 2 (peer), same burst", ms(bpg.p50), _spread(bpg)),
        Row(FIGURE, "ACP SDK agent (peer), same burst", ms(bacp.p50), _spread(bacp)),
    ]
