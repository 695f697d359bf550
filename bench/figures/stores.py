"""SQLite and PostgreSQL side by side, in one run: the same operations on each backend.

PostgreSQL runs as a throw-away local cluster (Debian's binaries, ``tests/pgserver``)
on a loopback port, with ``fsync`` off like the test fixture: the figure is the cost
of the store's protocol (round trips, LISTEN/NOTIFY, the pool), not of a disk. A team's
server is across a network, where each round trip adds its latency.

- *journal burst*: one ``append_chunks`` call (what a turn writes per burst of
  deltas), measured in the store directly.
- *fork* of a 100,000-message session and *history* of a 10,000-message one, through
  a sidecar (request sent → answer read), on sessions written before it starts.
- *3 sidecars × 30 sessions*: every session answers a streamed 40-word prompt at
  once; wall time for all 90 turns, and each turn's time.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.pgserver import PgServer
from threadline.store.factory import open_store

from ..context import Context
from ..fixtures import db_path, fill
from ..report import Row
from ..servers import THREADLINE, new_session, prompt_params, scripted, spawn
from ..stats import ms, ratio, summarize
from ..wire import Connection

FIGURE = "SQLite vs PostgreSQL"
BACKENDS = ("SQLite", "PostgreSQL")


def _bursts(home: Path, url: str | None, n: int) -> list[float]:
    store = open_store(db_path(home), url)
    try:
        store.create_session("burst", "/tmp", {"model": "scripted:echo"}, "t0")
        store.begin_stream("burst", "m1", {"turnId": "a1"})
        out: list[float] = []
        for i in range(n):
            t0 = time.perf_counter()
            store.append_chunks("burst", [("text", f"word{i} " * 8)])
            out.append((time.perf_counter() - t0) * 1000)
        return out
    finally:
        store.close()


def _timed(conn: Connection, method: str, params: dict[str, object], n: int) -> list[float]:
    out: list[float] = []
    for _ in range(n):
        pending = conn.send(method, params)
        pending.wait(600)
        out.append(pending.received_ms)
    return out


def _streaming(home: Path, env: dict[str, str], per_sidecar: int) -> tuple[float, list[float]]:
    steps: list[dict[str, object]] = []
    for i in range(40):
        steps += [{"text": f"w{i} "}, {"sleep": 0.01}]
    conns = [spawn(THREADLINE, home / f"sidecar-{i}", env=env) for i in range(3)]
    try:
        sessions = [
            (c, new_session(c, scripted(*steps), builtinTools=False))
            for c in conns
            for _ in range(per_sidecar)
        ]
        t0 = time.perf_counter()
        pending = [c.send("session/prompt", prompt_params(sid)) for c, sid in sessions]
        for p in pending:
            p.wait(600)
        wall = (time.perf_counter() - t0) * 1000
        return wall, [p.received_ms for p in pending]
    finally:
        for c in conns:
            c.close()


def _measure(ctx: Context, backend: str, url: str | None) -> dict[str, list[float]]:
    home = ctx.scratch.home(f"stores-{backend.lower()}")
    env = {"THREADLINE_STORE": url} if url else {}
    for sub in ("fills", *(f"sidecar-{i}" for i in range(3))):
        (home / sub).mkdir()
    out: dict[str, list[float]] = {"burst": _bursts(home / "fills", url, ctx.n(2000, 200))}
    big, hist = fill(home / "fills", [ctx.n(100_000, 10_000), ctx.n(10_000, 1_000)], url)
    ctx.log(f"stores: {backend} filled")
    conn = spawn(THREADLINE, home / "fills", env=env)
    try:
        out["fork"] = _timed(conn, "session/fork", {"sessionId": big}, ctx.n(10, 3))
        out["history"] = _timed(conn, "session/history", {"sessionId": hist}, ctx.n(10, 3))
    finally:
        conn.close()
    wall, turns = _streaming(home, env, ctx.n(30, 5))
    out["wall"] = [wall]
    out["turns"] = turns
    return out


def run(ctx: Context) -> list[Row]:
    server = PgServer()
    try:
        results = {
            "SQLite": _measure(ctx, "SQLite", None),
            "PostgreSQL": _measure(ctx, "PostgreSQL", server.new_database()),
        }
    finally:
        server.close()
    per = ctx.n(30, 5)
    cases = (
        ("burst", "journal burst (append_chunks of one run)"),
        ("fork", f"fork of a {ctx.n(100_000, 10_000):,}-message session"),
        ("history", f"history of {ctx.n(10_000, 1_000):,} messages"),
        ("turns", f"one streamed turn, 3 sidecars × {per} sessions at once"),
        ("wall", f"all {3 * per} turns, 3 sidecars × {per} sessions at once"),
    )
    rows: list[Row] = []
    for key, label in cases:
        lite = summarize(results["SQLite"][key])
        for backend in BACKENDS:
            s = summarize(results[backend][key])
            rows.append(
                Row(
                    FIGURE,
                    f"{label}, {backend}",
                    ms(s.p50),
                    f"p90 {ms(s.p90)} (n={s.n})",
                    "" if backend == "SQLite" else f"{ratio(s.ratio(lite))} SQLite",
                )
            )
    return rows
