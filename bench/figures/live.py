"""Prompts into running work and windows that follow each other (issue 27).

- **Steer to model**: a steering prompt sent while the turn's tool runs (the tool
  answers at once), to the model request that carries it: the turn's next model
  call, after the tool result is stored.
- **Cross-window**: two sidecars on one store, the second with the session open; the
  first streams a turn. Each chunk is journaled (committed) before its own client is
  shown it; the figure is from that client's read of a chunk to the other window's
  client's read of the same chunk (one store change token watcher per process, read
  every 50 ms, then one snapshot read of every open session). SQLite in one home, and
  PostgreSQL (``LISTEN/NOTIFY``) on a throw-away local cluster.
- **Idle cost**: CPU a sidecar uses in 10 s with 1 and with 100 sessions open and idle.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from tests.pgserver import PgServer
from threadline.engine.feed import POLL_SECONDS

from ..context import Context
from ..report import Row, verdict
from ..servers import THREADLINE, new_session, prompt_params, spawn
from ..stats import ms, summarize
from ..wire import Connection

FIGURE = "prompts into running work"
POLL_MS = POLL_SECONDS * 1000

LOOKUP = {"name": "lookup", "description": "Look a word up", "inputSchema": {"type": "object"}}


STEER_P99_MS = 50.0
STEER_OVER_MS = 10.0
"""Steering's target: p99 under `STEER_P99_MS`, its median at most this over a plain
prompt's (the same words sent as a prompt to an idle session)."""


def _plain_ms(conn: Connection, record: Path, i: int) -> float:
    """The peer: a prompt sent to an idle session → the model call carrying it."""
    script = {"rounds": [[{"text": "ok"}]], "record": str(record)}
    sid = new_session(conn, "scripted:" + json.dumps(script), builtinTools=False)
    record.unlink(missing_ok=True)
    sent = time.time()
    conn.call("session/prompt", prompt_params(sid, f"plain {i}"), timeout=120)
    first = json.loads(record.read_text().splitlines()[0])
    return (first["t"] - sent) * 1000


def _steer_ms(home: Path, n: int) -> tuple[list[float], list[float]]:
    """Steering latencies and, alternated with them, the plain prompt's."""
    record = home / "requests.jsonl"
    conn = spawn(THREADLINE, home)
    sent: list[float] = []
    plain: list[float] = []
    sid = ""

    def lookup(params: dict[str, Any], t: int) -> dict[str, Any]:
        steer = prompt_params(sid, f"steer {len(sent)}")
        steer["_meta"] = {"threadline": {"whileRunning": "steer"}}
        sent.append(time.time())
        conn.send("session/prompt", steer)
        return {"content": [{"type": "text", "text": "found"}]}

    conn.on_request["tool/call"] = lookup
    try:
        script = {
            "rounds": [[{"tool_call": {"name": "lookup", "arguments": {}}}], [{"text": "ok"}]],
            "record": str(record),
            "steered": True,
        }
        out: list[float] = []
        for i in range(n):
            sid = new_session(
                conn, "scripted:" + json.dumps(script), tools=[LOOKUP], builtinTools=False
            )
            record.unlink(missing_ok=True)
            conn.call("session/prompt", prompt_params(sid), timeout=120)
            calls = [json.loads(line) for line in record.read_text().splitlines()]
            got = next(
                c["t"] for c in calls if any(m["content"] == f"steer {i}" for m in c["messages"])
            )
            out.append((got - sent[i]) * 1000)
            plain.append(_plain_ms(conn, home / "plain.jsonl", i))
        return out, plain
    finally:
        conn.close()


def _cross_window_ms(home: Path, env: dict[str, str], turns: int) -> list[float]:
    a = spawn(THREADLINE, home, env=env)
    b = spawn(THREADLINE, home, env=env)
    seen_a: dict[tuple[str, str], int] = {}
    seen_b: dict[tuple[str, str], int] = {}
    lock = threading.Lock()

    def keep(into: dict[tuple[str, str], int]) -> Any:
        def on_update(params: dict[str, Any], t: int) -> None:
            u = params.get("update") or {}
            if u.get("sessionUpdate") == "agent_message_chunk":
                with lock:
                    into.setdefault((u.get("messageId", ""), u["content"]["text"]), t)

        return on_update

    a.on_update = keep(seen_a)
    b.on_update = keep(seen_b)
    words: list[dict[str, Any]] = []
    for i in range(20):
        words += [{"text": f"w{i} "}, {"sleep": 0.05}]
    try:
        sid = new_session(a, "scripted:" + json.dumps({"rounds": [words]}), builtinTools=False)
        b.call("session/load", {"sessionId": sid, "mcpServers": []})
        for _ in range(turns):
            a.call("session/prompt", prompt_params(sid), timeout=120)
        time.sleep(1.0)
        with lock:
            return [(seen_b[k] - t) / 1e6 for k, t in seen_a.items() if k in seen_b]
    finally:
        a.close()
        b.close()


def _notify_ms(url: str, n: int) -> list[float]:
    """The PostgreSQL peer: a bare ``NOTIFY`` from one connection → read by a
    listening one, in the same cluster (what carries a change between windows)."""
    import psycopg

    out: list[float] = []
    with (
        psycopg.connect(url, autocommit=True) as listener,
        psycopg.connect(url, autocommit=True) as sender,
    ):
        listener.execute("LISTEN bench_peer")
        for i in range(n):
            t0 = time.perf_counter_ns()
            sender.execute("SELECT pg_notify('bench_peer', %s)", (str(i),))
            for _ in listener.notifies(timeout=5, stop_after=1):
                out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def _idle_cpu(home: Path, sessions: int, seconds: float) -> float:
    conn = spawn(THREADLINE, home)
    try:
        for _ in range(sessions):
            new_session(conn, "scripted:echo", builtinTools=False)
        time.sleep(1.0)
        before = conn.cpu_seconds()
        time.sleep(seconds)
        return (conn.cpu_seconds() - before) / seconds * 100
    finally:
        conn.close()


def run(ctx: Context) -> list[Row]:
    rows: list[Row] = []
    steers, plains = _steer_ms(ctx.scratch.home("live-steer"), ctx.n(40, 5))
    steer, plain = summarize(steers), summarize(plains)
    rows.append(
        Row(
            FIGURE,
            "steer sent mid-tool → the model call carrying it",
            ms(steer.p50),
            f"p99 {ms(steer.p99)} (n={steer.n})",
            f"plain prompt to an idle session → its model call {ms(plain.p50)} "
            f"(p99 {ms(plain.p99)})",
            f"p99 < {ms(STEER_P99_MS)}, ≤ plain prompt + {ms(STEER_OVER_MS)}",
            verdict(steer.p99 < STEER_P99_MS and steer.p50 <= plain.p50 + STEER_OVER_MS),
        )
    )
    turns = ctx.n(10, 2)
    sqlite = summarize(_cross_window_ms(ctx.scratch.home("live-sqlite"), {}, turns))
    server = PgServer()
    try:
        url = server.new_database()
        pg = summarize(
            _cross_window_ms(ctx.scratch.home("live-pg"), {"THREADLINE_STORE": url}, turns)
        )
        notify = summarize(_notify_ms(url, ctx.n(200, 20)))
    finally:
        server.close()
    for name, s, goal in (("SQLite", sqlite, 300.0), ("PostgreSQL", pg, 150.0)):
        rows.append(
            Row(
                FIGURE,
                f"a chunk in one window → the other window, {name}",
                ms(s.p50),
                f"p99 {ms(s.p99)} (n={s.n})",
                f"bare NOTIFY → LISTEN, same cluster: {ms(notify.p50)} (p99 {ms(notify.p99)})"
                if name == "PostgreSQL"
                else f"floor: the watcher's poll, every {ms(POLL_MS)}",
                f"p99 < {ms(goal)}",
                verdict(s.p99 < goal),
            )
        )
    seconds = ctx.n(10, 3)
    one = _idle_cpu(ctx.scratch.home("live-idle-1"), 1, seconds)
    hundred = _idle_cpu(ctx.scratch.home("live-idle-100"), 100, seconds)
    rows.append(
        Row(FIGURE, "idle sidecar, 1 session open", f"{one:.2f} % CPU", f"over {seconds} s")
    )
    rows.append(
        Row(FIGURE, "idle sidecar, 100 sessions open", f"{hundred:.2f} % CPU", f"over {seconds} s")
    )
    return rows
