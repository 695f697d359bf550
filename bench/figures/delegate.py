"""Delegate overhead: a ``delegate`` call's spawn → the child's first model call, at 10
and 100,000 parent messages (1,000 in the smoke run), against a plain fork.

The parent sessions are written into the store before the server starts
(``fixtures``). *delegate*: the parent's model calls ``delegate`` with ``context:
"fork"`` and a child model that records each request it is sent
(``scripted``'s ``record``, with the wall clock); timed from the moment the bench
client reads the call's ``tool_call`` (announced once the parent's answer is stored,
after the scripted model's own per-request work on the parent's request) to the
child's first recorded request. *plain
fork*: what a client does by hand for the same child: ``session/fork`` of the parent,
then ``session/prompt`` on it (the child's model set on the parent before, not
timed, so the fork inherits it and is first loaded by its prompt); timed as
the fork's answer plus prompt sent → the fork's first recorded request. Both children
hold the parent's whole history, so both first model calls compile every message; the
difference is what ``delegate`` itself costs. Both models get a context window that
holds the whole session (no compaction).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..context import Context
from ..fixtures import fill
from ..report import Row, verdict
from ..servers import THREADLINE, prompt_params, spawn
from ..stats import ms, summarize
from ..wire import Connection

FIGURE = "delegate"
WINDOW = 50_000_000
"""Tokens: the scripted models' context window, larger than any session here."""
TARGET_MS = 50.0
"""Over a plain fork, at every size."""


def _model(record: Path | None, rounds: list[list[dict[str, Any]]]) -> str:
    script: dict[str, Any] = {"rounds": rounds, "context_window": WINDOW}
    if record is not None:
        script["record"] = str(record)
    return "scripted:" + json.dumps(script)


def _first_call(record: Path, after: int) -> float:
    """The wall clock of the recorded request number ``after`` (waits for it)."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        lines = record.read_text().splitlines() if record.exists() else []
        if len(lines) > after:
            return float(json.loads(lines[after])["t"])
        time.sleep(0.002)
    raise TimeoutError(f"no model call recorded in {record}")


def set_model(conn: Connection, sid: str, model: str) -> None:
    conn.call(
        "session/set_config_option",
        {"sessionId": sid, "configId": "model", "value": model},
        timeout=600,
    )


def delegated(conn: Connection, sid: str, record: Path) -> float:
    """ms from the ``delegate`` call shown to the child's first model call."""
    seen = len(record.read_text().splitlines()) if record.exists() else 0
    shown: list[float] = []

    def on_update(params: dict[str, Any], _t: int) -> None:
        update = params.get("update") or {}
        if update.get("sessionUpdate") == "tool_call" and not shown:
            shown.append(time.time())

    conn.on_update = on_update
    try:
        conn.call("session/prompt", prompt_params(sid, "delegate it"), timeout=600)
    finally:
        conn.on_update = None
    return (_first_call(record, seen) - shown[0]) * 1000


def forked(conn: Connection, sid: str, record: Path, child_model: str, parent: str) -> float:
    """ms of ``session/fork`` plus prompt sent → the fork's first model call. The fork
    inherits the child's model from the parent (switched before, not timed), so the
    fork is first loaded by its prompt, as a ``delegate`` child is by its turn."""
    seen = len(record.read_text().splitlines()) if record.exists() else 0
    set_model(conn, sid, child_model)
    pending = conn.send("session/fork", {"sessionId": sid})
    fork = pending.wait(600)
    fork_ms = pending.received_ms
    sent = time.time()
    conn.call("session/prompt", prompt_params(fork["sessionId"], "the task"), timeout=600)
    took = fork_ms + (_first_call(record, seen) - sent) * 1000
    set_model(conn, sid, parent)
    return took


def child_model(home: Path) -> str:
    """The child's model: records each request in ``home``'s ``child-requests.jsonl``."""
    return _model(home / "child-requests.jsonl", [[{"text": "done"}]])


def parent_model(child: str) -> str:
    """The parent's model: delegates the task with ``context: "fork"`` to ``child``."""
    task = {"task": "the task", "context": "fork", "model": child}
    return _model(
        None, [[{"tool_call": {"name": "delegate", "arguments": task}}], [{"text": "ok"}]]
    )


def run(ctx: Context) -> list[Row]:
    sizes = [10, 100_000] if not ctx.quick else [10, 1_000]
    reps = ctx.n(5, 2)
    home = ctx.scratch.home("delegate")
    ctx.log(f"delegate: writing parent sessions of {sizes} messages")
    ids = fill(home, sizes)
    record = home / "child-requests.jsonl"
    child = child_model(home)
    parent = parent_model(child)
    conn = spawn(THREADLINE, home)
    rows: list[Row] = []
    try:
        for n, sid in zip(sizes, ids, strict=True):
            set_model(conn, sid, parent)
            conn.call("session/history", {"sessionId": sid}, timeout=600)  # loaded once
            delegated = summarize(delegated(conn, sid, record) for _ in range(reps))
            forked = summarize(forked(conn, sid, record, child, parent) for _ in range(reps))
            over = delegated.p50 - forked.p50
            rows.append(
                Row(
                    FIGURE,
                    f"spawn → child's first model call, {n:,} parent messages",
                    f"{ms(delegated.p50)} delegate · {ms(forked.p50)} plain fork",
                    f"delegate {ms(delegated.min)}–{ms(delegated.max)}; fork "
                    f"{ms(forked.min)}–{ms(forked.max)} (n={reps})",
                    f"delegate − plain fork: {ms(over)}",
                    f"< {ms(TARGET_MS)} over a plain fork",
                    verdict(over < TARGET_MS),
                )
            )
            ctx.log(f"delegate: {n:,} messages done")
    finally:
        conn.close()
    return rows
