"""A long session after a restart, on the path a user takes (issue 31).

A session grows by prompting (the scripted echo model, two messages a turn) in one
sidecar, which then stops as an editor stops it: ``shutdown`` and ``exit``, no
``session/close``. A fresh ``threadline serve`` on the same home then answers the
first ``session/history``, and another fresh one the first ``session/load`` (each
the first request about the session in its process). On SQLite and on PostgreSQL
(a throw-away cluster, ``tests/pgserver``).

PostgreSQL at 100,000 messages: growing a session there by prompting takes ~30 ms a
prompt on this machine (50,000 prompts: ~25 minutes), so the session is the SQLite
figure's, grown by prompting there, then copied to PostgreSQL with ``threadline store
migrate`` (the path of a team moving its sessions to a shared store) and prompted
`MORE` more turns on PostgreSQL before its ``shutdown``: the fold that the fresh
sidecars read was written by a sidecar on PostgreSQL as the session grew and at its
shutdown, as on the user's path.

Same-run peers, on the same store and session: the same fresh-server calls with the
kept fold removed from the store first (what every restart cost before folds were
kept as sessions grow: the whole log folded), and the bench client's own stdlib
``json.dumps`` of that history (the least any client pays to hold it). Each fresh sidecar is
first asked ``session/list`` (as an editor does), so what is timed is the session's
own cost, not the imports a fresh process does after answering ``initialize`` (those
are the cold-start figure's). Times run
from the request sent to the last byte of the answer (for load: of the replay too).
The sidecars may write bytecode (``PYTHONDONTWRITEBYTECODE`` emptied), as an installed
Threadline has it: otherwise every fresh process compiles its modules again (~0.4 s
here), which no user's restart pays.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.pgserver import PgServer

from ..context import Context
from ..fixtures import db_path
from ..report import Row, verdict
from ..servers import THREADLINE, new_session, prompt_params, spawn
from ..stats import Summary, ms, ratio, summarize

FIGURE = "restart"
TARGETS = {10_000: (50.0, 100.0), 100_000: (500.0, 1000.0)}
"""Messages → (history, load) targets in ms, cold in a fresh process."""

PG_GROWN = 10_000
"""Sessions up to this size are grown by prompting on PostgreSQL too; longer ones are
migrated from the SQLite figure's session (module docstring)."""

MORE = 100
"""Turns prompted on PostgreSQL after the migration, before the ``shutdown``."""


def _grow(
    home: Path, env: dict[str, str], turns: int, ctx: Context, sid: str | None = None
) -> tuple[str, float]:
    """``turns`` prompts (two messages each) into a new session (or ``sid``); the sidecar
    then stops with ``shutdown`` + ``exit``. Returns the session and the median ms per
    prompt."""
    conn = spawn(THREADLINE, home, env=env)
    try:
        if sid is None:
            sid = new_session(conn, "scripted:echo", builtinTools=False)
        else:
            conn.call("session/resume", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
        times: list[float] = []
        for i in range(turns):
            pending = conn.send("session/prompt", prompt_params(sid, f"turn {i}"))
            pending.wait(600)
            times.append(pending.received_ms)
            if i and i % 5000 == 0:
                ctx.log(f"restart: {2 * i:,} messages")
    finally:
        conn.close(timeout=120)
    return sid, summarize(times).p50


def _migrated(
    source: Path, home: Path, env: dict[str, str], sid: str, ctx: Context
) -> tuple[str, float]:
    """The SQLite figure's session copied to PostgreSQL (``threadline store migrate``),
    then prompted `MORE` turns there and shut down."""
    argv = [*THREADLINE.argv[:-1], "store", "migrate", "--from", str(db_path(source))]
    t0 = time.monotonic()
    subprocess.run(
        [*argv, "--to", env["THREADLINE_STORE"]],
        env={**os.environ, **env, "THREADLINE_HOME": str(home)},
        check=True,
        capture_output=True,
        timeout=1800,
    )
    ctx.log(f"restart: migrated to PostgreSQL in {time.monotonic() - t0:.0f} s")
    return _grow(home, env, MORE, ctx, sid)


def _first(home: Path, env: dict[str, str], method: str, sid: str) -> tuple[float, Any]:
    """The first call about ``sid`` in a fresh sidecar: ms to the last byte, result.
    ``session/list`` goes first (as an editor lists sessions before opening one), so
    the imports done after ``initialize`` is answered are not counted here."""
    conn = spawn(THREADLINE, home, env=env)
    try:
        conn.call("session/list", {}, timeout=120)
        params: dict[str, Any] = {"sessionId": sid}
        if method == "session/load":
            params |= {"cwd": "/tmp", "mcpServers": []}
        pending = conn.send(method, params)
        result = pending.wait(600)
        return pending.received_ms, result
    finally:
        conn.close(timeout=60)


def _small(home: Path, env: dict[str, str]) -> str:
    """A two-message session on the same home: what any first open in a fresh process
    costs whatever the session's length (the session's tool modules imported, the
    first queries)."""
    conn = spawn(THREADLINE, home, env=env)
    try:
        sid = new_session(conn, "scripted:echo", builtinTools=False)
        conn.call("session/prompt", prompt_params(sid, "hi"))
        return sid
    finally:
        conn.close(timeout=60)


def _drop_folds(home: Path, url: str | None) -> None:
    """Remove every kept fold, behind the store's back (the peer's starting point)."""
    if url is None:
        with sqlite3.connect(db_path(home)) as db:
            db.execute("DELETE FROM folds")
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute("DELETE FROM tl_folds")


def _measure(
    ctx: Context,
    backend: str,
    url: str | None,
    messages: int,
    reps: int,
    grown: tuple[Path, str] | None = None,
) -> tuple[dict[str, list[float]], tuple[Path, str]]:
    """The figure's runs on one store; ``grown``: the SQLite home and session to
    migrate from (PostgreSQL past `PG_GROWN`). Returns the runs, and the home and
    session measured."""
    home = ctx.scratch.home(f"restart-{backend.lower()}-{messages}")
    env = {"PYTHONDONTWRITEBYTECODE": ""} | ({"THREADLINE_STORE": url} if url else {})
    t0 = time.monotonic()
    if grown is not None:
        sid, per_prompt = _migrated(grown[0], home, env, grown[1], ctx)
    else:
        sid, per_prompt = _grow(home, env, messages // 2, ctx)
    ctx.log(f"restart: {backend} grown to {messages:,} in {time.monotonic() - t0:.0f} s")
    out: dict[str, list[float]] = {"prompt": [per_prompt]}
    small = _small(home, env)
    for key in ("history", "load"):
        out[key] = [_first(home, env, f"session/{key}", sid)[0] for _ in range(reps)]
        out[f"{key} small"] = [_first(home, env, f"session/{key}", small)[0] for _ in range(reps)]
    history: list[dict[str, Any]] = _first(home, env, "session/history", sid)[1]["messages"]
    if len(history) < messages:  # and the summaries of auto-compaction
        raise AssertionError(f"{len(history)} messages in history, {messages} prompted")
    dumps: list[float] = []
    for _ in range(reps):
        t = time.perf_counter()
        json.dumps(history)
        dumps.append((time.perf_counter() - t) * 1000)
    out["dumps"] = dumps
    for key in ("history", "load"):
        runs: list[float] = []
        for _ in range(reps):
            _drop_folds(home, url)
            runs.append(_first(home, env, f"session/{key}", sid)[0])
        out[f"{key} unkept"] = runs
    return out, (home, sid)


def _rows(backend: str, messages: int, r: dict[str, list[float]], how: str) -> list[Row]:
    rows: list[Row] = []
    dumps = summarize(r["dumps"])
    for i, key in enumerate(("history", "load")):
        s = summarize(r[key])
        peer = summarize(r[f"{key} unkept"])
        small = summarize(r[f"{key} small"])
        target = TARGETS.get(messages, (None, None))[i]
        rows.append(
            Row(
                FIGURE,
                f"first session/{key} in a fresh sidecar, {messages:,} messages {how}, {backend}",
                ms(s.p50),
                _spread(s),
                f"{ratio(s.ratio(peer))} the log folded ({ms(peer.p50)}) · "
                f"{ratio(s.ratio(dumps))} client json.dumps of the history ({ms(dumps.p50)}) · "
                f"a 2-message session's first {key}: {ms(small.p50)}",
                "" if target is None else f"< {ms(target)}",
                "" if target is None else verdict(s.p50 < target),
            )
        )
    rows.append(
        Row(
            FIGURE,
            f"detail: prompt while growing to {messages:,} messages, {backend}",
            ms(r["prompt"][0]),
            "median over the growth" if "migrated" not in how else f"median of the last {MORE}",
        )
    )
    return rows


def _spread(s: Summary) -> str:
    return f"p90 {ms(s.p90)} · {ms(s.min)}–{ms(s.max)} (n={s.n})"


def run(ctx: Context) -> list[Row]:
    sizes = [1_000] if ctx.quick else [10_000, 100_000]
    reps = ctx.n(3, 2)
    rows: list[Row] = []
    server = PgServer()
    try:
        for messages in sizes:
            runs, grown = _measure(ctx, "SQLite", None, messages, reps)
            rows += _rows("SQLite", messages, runs, "grown by prompting")
            if messages <= PG_GROWN:
                runs, _ = _measure(ctx, "PostgreSQL", server.new_database(), messages, reps)
                how = "grown by prompting"
            else:
                url = server.new_database()
                runs, _ = _measure(ctx, "PostgreSQL", url, messages, reps, grown)
                how = f"grown by prompting on SQLite, migrated, {MORE} turns more"
            rows += _rows("PostgreSQL", messages, runs, how)
    finally:
        server.close()
    return rows
