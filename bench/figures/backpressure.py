"""Backpressure: a client that stops reading stdout for 10 s in the middle of a long stream.

The scripted model streams numbered blocks (``<000042>`` then 1,000 one-character
deltas), so the text the client finally holds can be compared with the exact text
expected: complete and in order. The same stream is run twice on fresh servers, once
read without pause and once with the pause, sampling the server's RSS meanwhile; the
difference in peak RSS is what the backlog cost, per delta streamed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from ..context import Context
from ..report import Row, verdict
from ..servers import THREADLINE, new_session, prompt_params, scripted, spawn
from ..stats import kib
from ..streaming import TIMEOUT, Received

FIGURE = "backpressure"
BLOCK = 1000
BOUND_B_PER_DELTA = 100
"""A backlog kept as one JSON-RPC message per delta costs several hundred bytes each."""


def _script(blocks: int) -> tuple[str, str, int]:
    steps = []
    expected = []
    for b in range(blocks):
        steps += [{"text": f"<{b:06d}>"}, {"repeat": {"text": "x", "count": BLOCK}}]
        expected.append(f"<{b:06d}>" + "x" * BLOCK)
    return scripted(*steps), "".join(expected), blocks * (BLOCK + 1)


@dataclass(frozen=True, slots=True)
class _Run:
    base_kb: int
    peak_kb: int
    mid_pause_kb: int
    end_of_pause_kb: int
    drain_s: float
    complete: bool
    chunks: int
    deltas: int

    @property
    def growth_kb(self) -> int:
        return self.peak_kb - self.base_kb


def _stream(ctx: Context, blocks: int, pause_s: float) -> _Run:
    model, expected, deltas = _script(blocks)
    conn = spawn(THREADLINE, ctx.scratch.home("backpressure"))
    try:
        sid = new_session(conn, model)
        base = conn.rss_kb()
        received = Received(keep_text=True)
        started = threading.Event()

        def on_update(params: dict[str, Any], t: int) -> None:
            received(params, t)
            if received.chunks[sid]:
                started.set()

        conn.on_update = on_update
        pending = conn.send("session/prompt", prompt_params(sid))
        samples: list[int] = [0]
        resumed = pending.t_sent
        if pause_s:
            started.wait(30)
            conn.pause_reading()
            end = time.monotonic() + pause_s
            while time.monotonic() < end:
                samples.append(conn.rss_kb())
                time.sleep(0.25)
            resumed = time.perf_counter_ns()
            conn.resume_reading()
        pending.wait(TIMEOUT)
        return _Run(
            base_kb=base,
            peak_kb=conn.peak_rss_kb(),
            mid_pause_kb=samples[len(samples) // 2],
            end_of_pause_kb=samples[-1],
            drain_s=(pending.t_done - resumed) / 1e9,
            complete="".join(received.text[sid]) == expected,
            chunks=received.chunks[sid],
            deltas=deltas,
        )
    finally:
        conn.close()


def run(ctx: Context) -> list[Row]:
    blocks = ctx.n(2000, 300)
    pause = ctx.n(10, 3)
    free = _stream(ctx, blocks, 0)
    ctx.log("backpressure: reference stream done")
    held = _stream(ctx, blocks, pause)
    ctx.log("backpressure: paused stream done")
    extra_kb = held.growth_kb - free.growth_kb
    per_delta = extra_kb * 1024 / held.deltas
    text = "complete and in order" if held.complete else "LOST OR REORDERED"
    return [
        Row(
            FIGURE,
            f"reader stopped {pause} s during {held.deltas:,} deltas "
            f"({held.deltas / 1e6:.1f} MB of text)",
            f"+{kib(extra_kb)} peak RSS vs unpaused",
            f"RSS mid-pause {kib(held.mid_pause_kb)}, end of pause {kib(held.end_of_pause_kb)}, "
            f"peak {kib(held.peak_kb)} (unpaused peak {kib(free.peak_kb)})",
            f"{per_delta:.1f} B per delta; text {text} in {held.chunks:,} notifications; "
            f"drained {held.drain_s:.2f} s after resuming",
            f"bounded (< {BOUND_B_PER_DELTA} B/delta); all text, in order",
            verdict(held.complete and per_delta < BOUND_B_PER_DELTA),
        ),
    ]
