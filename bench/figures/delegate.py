"""Delegate overhead: a ``delegate`` call's spawn → the child's first model call, for
parents of 10 and 100,000 messages (1,000 in the smoke run), against a plain fork.

The parent sessions are written into the store before the server starts
(``fixtures``). *delegate*: the parent's model calls ``delegate`` with ``context:
"fork"`` and a child model that records each request it is sent
(``scripted``'s ``record``, with the wall clock); timed from the moment the parent's
model emits the call (a ``mark`` step just before it, stamped by the scripted model
with the server's wall clock) to the child's first recorded request. *plain
fork*: what a client does by hand for the same child: ``session/fork`` of the parent,
then ``session/prompt`` on it (the child's model set on the parent before, not
timed, so the fork inherits it and is first loaded by its prompt); timed as
the fork's answer plus prompt sent → the fork's first recorded request; the
difference is what ``delegate`` itself costs.

The 100,000-message parent is measured twice. *Compacted*, on a 200,000-token window:
a session that long on any real model has been compacted along the way, so its
working set (and the child's first request) is the summary and the 40 messages after
it — what a user meets. *Uncompacted*, on a 50M-token window no model has: every
message in every request, the worst case, dominated by compiling 100,000 messages.
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
"""Tokens: the scripted models' context window in the uncompacted case, larger than
any session here (no model has such a window: the worst case, not a user's)."""
REAL_WINDOW = 200_000
"""Tokens: a large real model's window, for the compacted case."""
KEPT = 40
"""Messages a compaction left in the compacted parent's working set."""
TARGET_MS = 50.0
"""Over a plain fork, at every size."""


def _model(record: Path | None, rounds: list[list[dict[str, Any]]], window: int) -> str:
    script: dict[str, Any] = {"rounds": rounds, "context_window": window}
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
    """ms from the parent's model emitting the ``delegate`` call (its ``mark`` step,
    stamped by the scripted model just before it yields the call) to the child's first
    model call: both stamps the server's wall clock."""
    marks = _marks(record)
    seen = len(record.read_text().splitlines()) if record.exists() else 0
    before = len(marks.read_text().splitlines()) if marks.exists() else 0
    conn.call("session/prompt", prompt_params(sid, "delegate it"), timeout=600)
    start = float(marks.read_text().splitlines()[before])
    return (_first_call(record, seen) - start) * 1000


def _marks(record: Path) -> Path:
    return record.with_name("delegate-calls.txt")


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


def child_model(home: Path, window: int = WINDOW) -> str:
    """The child's model: records each request in ``home``'s ``child-requests.jsonl``."""
    return _model(home / "child-requests.jsonl", [[{"text": "done"}]], window)


def parent_model(child: str, record: Path, window: int = WINDOW) -> str:
    """The parent's model: delegates the task with ``context: "fork"`` to ``child``,
    stamping the moment it emits the call beside ``record``."""
    task = {"task": "the task", "context": "fork", "model": child}
    call = {"tool_call": {"name": "delegate", "arguments": task}}
    rounds = [[{"mark": str(_marks(record))}, call], [{"text": "ok"}]]
    return _model(None, rounds, window)


def run(ctx: Context) -> list[Row]:
    big = ctx.n(100_000, 1_000)
    # (parent messages, compacted, window): a real model's session of 100,000 messages
    # has been compacted many times (its working set is the summary and what followed);
    # the uncompacted one, every message in every request, is the worst case.
    cases = [(10, False, WINDOW), (big, True, REAL_WINDOW), (big, False, WINDOW)]
    reps = ctx.n(5, 2)
    home = ctx.scratch.home("delegate")
    ctx.log(f"delegate: writing parent sessions of {[n for n, _, _ in cases]} messages")
    ids = [fill(home, [n], compacted=KEPT if compacted else None)[0] for n, compacted, _ in cases]
    record = home / "child-requests.jsonl"
    conn = spawn(THREADLINE, home)
    rows: list[Row] = []
    try:
        for (n, compacted, window), sid in zip(cases, ids, strict=True):
            child = child_model(home, window)
            parent = parent_model(child, record, window)
            set_model(conn, sid, parent)
            conn.call("session/history", {"sessionId": sid}, timeout=600)  # loaded once
            spawned = summarize(delegated(conn, sid, record) for _ in range(reps))
            plain = summarize(forked(conn, sid, record, child, parent) for _ in range(reps))
            over = spawned.p50 - plain.p50
            shape = (
                f"compacted (working set: summary + {KEPT}), {window:,}-token window"
                if compacted
                else f"uncompacted, {window:,}-token window"
            )
            rows.append(
                Row(
                    FIGURE,
                    f"spawn → child's first model call, {n:,} parent messages, {shape}",
                    f"{ms(spawned.p50)} delegate · {ms(plain.p50)} plain fork",
                    f"delegate {ms(spawned.min)}–{ms(spawned.max)}; fork "
                    f"{ms(plain.min)}–{ms(plain.max)} (n={reps})",
                    f"delegate − plain fork: {ms(over)}",
                    f"< {ms(TARGET_MS)} over a plain fork",
                    verdict(over < TARGET_MS),
                )
            )
            ctx.log(f"delegate: {n:,} messages ({shape}) done")
    finally:
        conn.close()
    return rows
