"""``session/list`` over a store of 10,000 sessions (and 100, for scale).

The sessions (two messages each) are written before the server starts
(``fixtures.fill``). A first page takes a snapshot of the ordering (every visible id,
most recently updated first) and reads 50 rows; later pages read 50 rows of that
snapshot by cursor. Both are timed from the request sent to the last byte read, the
first page repeated, then one whole walk page by page.
"""

from __future__ import annotations

from ..context import Context
from ..fixtures import fill
from ..report import Row, verdict
from ..servers import THREADLINE, spawn
from ..stats import ms, ms_spread, summarize
from ..wire import Connection

FIGURE = "session/list"
TARGET_MS = 20.0


def _walk(conn: Connection) -> tuple[list[float], list[float], int]:
    """(first-page times, later-page times, sessions listed) of one walk."""
    firsts: list[float] = []
    later: list[float] = []
    listed = 0
    cursor: str | None = None
    while True:
        params = {"cursor": cursor} if cursor else {}
        pending = conn.send("session/list", params)
        result = pending.wait(120)
        (later if cursor else firsts).append(pending.received_ms)
        listed += len(result["sessions"])
        cursor = result.get("nextCursor")
        if not cursor:
            return firsts, later, listed


def run(ctx: Context) -> list[Row]:
    rows: list[Row] = []
    for count in (100, ctx.n(10_000, 2_000)):
        home = ctx.scratch.home(f"list-{count}")
        ctx.log(f"session/list: writing {count:,} sessions")
        fill(home, [2] * count)
        conn = spawn(THREADLINE, home)
        try:
            firsts = [_walk_first(conn) for _ in range(ctx.n(20, 5))]
            walk_first, later, listed = _walk(conn)
        finally:
            conn.close()
        first = summarize([*firsts, *walk_first])
        rows.append(
            Row(
                FIGURE,
                f"first page (snapshot of {count:,} sessions + 50 rows)",
                ms(first.p50),
                ms_spread(first),
                f"{listed:,} sessions listed in one walk",
                f"< {ms(TARGET_MS)} per page",
                verdict(first.p50 < TARGET_MS),
            )
        )
        if later:
            nxt = summarize(later)
            rows.append(
                Row(
                    FIGURE,
                    f"next pages by cursor ({count:,} sessions)",
                    ms(nxt.p50),
                    ms_spread(nxt),
                    f"{len(later) + 1} pages",
                    f"< {ms(TARGET_MS)} per page",
                    verdict(nxt.p50 < TARGET_MS),
                )
            )
        ctx.log(f"session/list: {count:,} sessions done")
    return rows


def _walk_first(conn: Connection) -> float:
    pending = conn.send("session/list", {})
    pending.wait(120)
    return pending.received_ms
