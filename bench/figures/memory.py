"""Memory: the server's resident set (``VmRSS``) empty, per idle session, and loaded.

1. Empty: after ``initialize``.
2. Per idle session: ``session/new`` many times, in 5 batches (scripted model,
   nothing prompted); the RSS growth divided by the count, overall and per batch
   (CPython's allocator grows in arenas, so a batch's growth is lumpy).
3. Loaded: 100 sessions of 1,000 messages written into the store beforehand, then
   attached with ``session/resume`` (which loads the transcript, without replay).
"""

from __future__ import annotations

import time

from ..context import Context
from ..fixtures import fill
from ..report import Row, verdict
from ..servers import THREADLINE, new_session, spawn
from ..stats import kib, summarize
from ..wire import Connection

FIGURE = "memory (server RSS)"
SETTLE_S = 0.3
BATCHES = 5


def _rss(conn: Connection) -> int:
    time.sleep(SETTLE_S)
    return conn.rss_kb()


def run(ctx: Context) -> list[Row]:
    idle = ctx.n(1000, 200)
    loaded, per = 100, ctx.n(1000, 100)
    home = ctx.scratch.home("memory")
    ctx.log(f"memory: writing {loaded} sessions of {per:,} messages")
    ids = fill(home, [per] * loaded)
    conn = spawn(THREADLINE, home)
    try:
        empty = _rss(conn)
        batches: list[float] = []
        before = empty
        for _ in range(BATCHES):
            for _ in range(idle // BATCHES):
                new_session(conn, "scripted:echo")
            now = _rss(conn)
            batches.append((now - before) / (idle // BATCHES))
            before = now
        after_idle = before
        ctx.log("memory: idle sessions done")
        for sid in ids:
            conn.call("session/resume", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
        after_loaded = _rss(conn)
        peak = conn.peak_rss_kb()
        ctx.log("memory: loaded sessions done")
    finally:
        conn.close()
    per_idle = (after_idle - empty) / idle
    spread = summarize(batches)
    grown = after_loaded - after_idle
    messages = loaded * per
    return [
        Row(FIGURE, "empty server (after initialize)", kib(empty)),
        Row(
            FIGURE,
            f"per idle session ({idle:,} × session/new)",
            kib(per_idle),
            f"per batch of {idle // BATCHES}: {kib(spread.min)}–{kib(spread.max)}",
            f"{kib(after_idle)} with all {idle:,}",
            "≤ 50 KB",
            verdict(per_idle <= 50),
        ),
        Row(
            FIGURE,
            f"after loading {loaded} sessions × {per:,} messages",
            kib(after_loaded),
            f"peak {kib(peak)}",
            f"+{kib(grown)} for {messages:,} messages ({grown * 1024 / messages:,.0f} B/message)",
            "report",
        ),
    ]
