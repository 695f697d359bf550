"""What sharing a data folder costs: the prompt and history paths of one sidecar alone
on its home, then with two other sidecars on the same home (idle, then busy writing
their own sessions), in the same run.

Ownership costs two small write transactions per turn (take and release the lease)
and a heartbeat while it runs; freshness costs one ``PRAGMA data_version`` per
request, plus one row read when another process has committed since. A prompt is a
one-word scripted answer, so the figure is the engine's overhead, not a model's.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ..context import Context
from ..fixtures import db_path, fill
from ..report import Row
from ..servers import THREADLINE, new_session, prompt_params, scripted, spawn
from ..stats import Summary, ms, ratio, summarize
from ..wire import Connection

FIGURE = "sharing a home"


def _prompt_ms(conn: Connection, sid: str, n: int) -> list[float]:
    out: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        conn.call("session/prompt", prompt_params(sid), timeout=120)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _history_ms(conn: Connection, sid: str, n: int) -> list[float]:
    out: list[float] = []
    for _ in range(n):
        pending = conn.send("session/history", {"sessionId": sid})
        pending.wait(120)
        out.append(pending.received_ms)
    return out


class _Busy:
    """Other sidecars on the home prompting their own sessions until stopped."""

    def __init__(self, conns: list[Connection]) -> None:
        self.stop = threading.Event()
        self.turns = 0
        self.threads = [threading.Thread(target=self._loop, args=(c,)) for c in conns]

    def _loop(self, conn: Connection) -> None:
        sid = new_session(conn, scripted({"text": "ok"}))
        while not self.stop.is_set():
            conn.call("session/prompt", prompt_params(sid), timeout=120)
            self.turns += 1

    def __enter__(self) -> _Busy:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)


def _measure(conn: Connection, hist_sid: str, n: int) -> tuple[list[float], list[float]]:
    # A new session per phase: a prompt compiles the whole history, so a session that
    # grew through the earlier phases would make the later ones look slower.
    sid = new_session(conn, scripted({"text": "ok"}))
    _prompt_ms(conn, sid, 5)  # warm-up
    return _prompt_ms(conn, sid, n), _history_ms(conn, hist_sid, n)


def _us(value_ms: float) -> str:
    return f"{value_ms * 1000:.1f} µs"


def _store_costs(home: Path, n: int) -> tuple[Summary, Summary]:
    """The two costs in the store itself: a lease taken and released (two write
    transactions), and the freshness check (one ``PRAGMA data_version``)."""
    from threadline.store.owners import current_owner
    from threadline.store.sqlite import EventStore

    store = EventStore(db_path(home))
    try:
        sid = store.list_session_ids()[0]
        me = current_owner()
        lease: list[float] = []
        check: list[float] = []
        for _ in range(n):
            t0 = time.perf_counter()
            store.acquire_lease(sid, me, "turn", None, time.time())
            store.release_lease(sid, me)
            t1 = time.perf_counter()
            store.change_token()
            t2 = time.perf_counter()
            lease.append((t1 - t0) * 1000)
            check.append((t2 - t1) * 1000)
    finally:
        store.close()
    return summarize(lease), summarize(check)


def run(ctx: Context) -> list[Row]:
    n = ctx.n(300, 40)
    home: Path = ctx.scratch.home("sharing")
    [hist_sid] = fill(home, [1000])
    main = spawn(THREADLINE, home)
    others: list[Connection] = []
    try:
        alone = _measure(main, hist_sid, n)
        others = [spawn(THREADLINE, home) for _ in range(2)]
        idle = _measure(main, hist_sid, n)
        with _Busy(others) as busy:
            loaded = _measure(main, hist_sid, n)
        ctx.log(f"sharing: others ran {busy.turns} turns meanwhile")
    finally:
        main.close()
        for c in others:
            c.close()
    lease, check = _store_costs(home, ctx.n(2000, 200))
    rows: list[Row] = [
        Row(FIGURE, "lease taken and released (per turn)", _us(lease.p50), f"p90 {_us(lease.p90)}"),
        Row(FIGURE, "freshness check (per request)", _us(check.p50), f"p90 {_us(check.p90)}"),
    ]
    for label, pick in (("prompt (one-word answer)", 0), ("history of 1,000 messages", 1)):
        a: Summary = summarize(alone[pick])
        i: Summary = summarize(idle[pick])
        b: Summary = summarize(loaded[pick])
        rows += [
            Row(FIGURE, f"{label}, alone on its home", ms(a.p50), f"p90 {ms(a.p90)} (n={a.n})"),
            Row(
                FIGURE,
                f"{label}, two other sidecars idle on the home",
                ms(i.p50),
                f"p90 {ms(i.p90)} (n={i.n})",
                f"{ratio(i.ratio(a))} alone",
            ),
            Row(
                FIGURE,
                f"{label}, two other sidecars prompting meanwhile",
                ms(b.p50),
                f"p90 {ms(b.p90)} (n={b.n})",
                f"{ratio(b.ratio(a))} alone (2 cores shared by 3 processes)",
            ),
        ]
    return rows
