"""Concurrency: 100 sessions streaming at once through one server.

Each session's scripted model streams the same number of one-character deltas. All
100 prompts are written back to back, then the bench waits for every answer.
Aggregate rate = all deltas / (first prompt sent → last prompt answered); fairness =
the slowest session's time to its answer over the fastest's. One session streaming
the same count alone, on the same server, in the same run, is the reference.
"""

from __future__ import annotations

from ..context import Context
from ..report import Row, verdict
from ..servers import THREADLINE, new_session, prompt_params, spawn
from ..stats import rate, ratio, summarize
from ..streaming import TIMEOUT, Received, repeat_model, stream_once
from ..wire import Connection

FIGURE = "concurrency"


def all_at_once(conn: Connection, sessions: int, count: int) -> tuple[float, float, bool]:
    """(aggregate deltas/s, slowest/fastest, every character arrived)."""
    model = repeat_model(count)
    ids = [new_session(conn, model) for _ in range(sessions)]
    received = Received()
    conn.on_update = received
    pending = [conn.send("session/prompt", prompt_params(sid)) for sid in ids]
    for p in pending:
        p.wait(TIMEOUT)
    conn.on_update = None
    seconds = (max(p.t_done for p in pending) - min(p.t_sent for p in pending)) / 1e9
    durations = [p.t_done - p.t_sent for p in pending]
    complete = all(received.chars[sid] == count for sid in ids)
    return sessions * count / seconds, max(durations) / min(durations), complete


def run(ctx: Context) -> list[Row]:
    sessions = 100
    count = ctx.n(20_000, 3_000)
    reps = ctx.n(3, 1)
    conn = spawn(THREADLINE, ctx.scratch.home("concurrency"))
    single: list[float] = []
    many: list[tuple[float, float, bool]] = []
    try:
        stream_once(conn, 1000)  # warm-up
        for i in range(reps):
            single.append(stream_once(conn, count).rate)
            many.append(all_at_once(conn, sessions, count))
            ctx.log(f"concurrency rep {i + 1}/{reps}")
    finally:
        conn.close()
    one = summarize(single)
    agg = summarize(m[0] for m in many)
    fair = summarize(m[1] for m in many)
    complete = all(m[2] for m in many)
    vs_one = summarize(m[0] / s for m, s in zip(many, single, strict=True))
    return [
        Row(
            FIGURE,
            f"{sessions} sessions × {count:,} deltas at once: aggregate rate",
            rate(agg.p50, " deltas/s"),
            f"{rate(agg.min)}–{rate(agg.max)} (n={agg.n})",
            f"{ratio(vs_one.p50)} one session alone ({rate(one.p50, ' deltas/s')})"
            + ("" if complete else "; TEXT LOST"),
            "≥ 0.8× one session's rate",
            verdict(vs_one.p50 >= 0.8 and complete),
        ),
        Row(
            FIGURE,
            "slowest / fastest session (time to answer)",
            ratio(fair.p50),
            f"{ratio(fair.min)}–{ratio(fair.max)} (n={fair.n})",
            "",
            "≤ 1.5",
            verdict(fair.p50 <= 1.5),
        ),
    ]
