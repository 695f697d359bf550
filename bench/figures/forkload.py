"""Fork, history and load for sessions of 10 / 1,000 / 10,000 / 100,000 messages.

The sessions are written into the store before the server starts (``fixtures``).
Each operation is timed twice over: *cold*, on a session the server has just
unloaded (``session/close``), repeated a few times, and *warm*, repeated while it
is loaded; the verdict takes the worse of the two medians. A closed session's fold
is kept (``engine/folds.py``), so *cold* is a reopen; the first call in a freshly
started server, where nothing is kept, is shown apart. Times
run from the request sent to the last byte of the answer read; the bench client's
own JSON parse of the answer (stdlib ``json``) is shown apart, since an editor's
parser is not Threadline's cost. Rows
written by a fork are counted in every table through a separate read-only SQLite
connection. ``session/fork`` is being built; until the server answers it, its rows
say "n/a (not implemented)".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..context import Context
from ..fixtures import fill, row_count
from ..report import Row, verdict
from ..servers import THREADLINE, THREADLINE_UNCACHED, spawn
from ..stats import Summary, ms, ratio, summarize
from ..wire import Connection, RpcError

FORK = "fork"
HISTORY = "history / load"
METHOD_NOT_FOUND = -32601


@dataclass(frozen=True, slots=True)
class _Timed:
    received_ms: float
    """Request sent → last byte of the answer read (what the server and pipe cost)."""
    parsed_ms: float
    """… → answer parsed by the bench client (stdlib ``json``)."""
    result: Any
    bytes_in: int
    """Bytes read meanwhile: the answer plus any notifications (``session/load``)."""


def _timed(conn: Connection, method: str, params: dict[str, Any]) -> _Timed:
    before = conn.bytes_in
    pending = conn.send(method, params)
    result = pending.wait(600)
    return _Timed(pending.received_ms, pending.ms, result, conn.bytes_in - before)


def _unload(conn: Connection, sid: str) -> None:
    conn.call("session/close", {"sessionId": sid}, timeout=600)


def _cold(conn: Connection, sid: str, method: str, params: dict[str, Any]) -> _Timed:
    """The call on a session the server has just unloaded."""
    _unload(conn, sid)
    return _timed(conn, method, params)


def _spread(s: Summary, label: str) -> str:
    return f"{label} p90 {ms(s.p90)} · {ms(s.min)}–{ms(s.max)} (n={s.n})"


def _fork_rows(
    conn: Connection, home: Path, sid: str, n: int, reps: int, cold_reps: int
) -> list[Row]:
    params = {"sessionId": sid}
    target = "< 5 ms, one row, at every size"
    try:
        _unload(conn, sid)
        before = row_count(home)
        first = _timed(conn, "session/fork", params)
        rows = row_count(home) - before
    except RpcError as exc:
        if exc.code != METHOD_NOT_FOUND:
            raise
        return [Row(FORK, f"{n:,} messages", "n/a (not implemented)", "", "", target, "n/a")]
    cold = summarize(
        [first.received_ms]
        + [_cold(conn, sid, "session/fork", params).received_ms for _ in range(cold_reps - 1)]
    )
    warm = summarize(_timed(conn, "session/fork", params).received_ms for _ in range(reps))
    child = (first.result or {}).get("sessionId")
    return [
        Row(
            FORK,
            f"session/fork, {n:,} messages",
            f"{ms(warm.p50)} warm · {ms(cold.p50)} cold",
            f"{_spread(warm, 'warm')}; {_spread(cold, 'cold')}",
            f"{rows} row(s) written",
            target,
            verdict(max(warm.p50, cold.p50) < 5 and rows == 1 and bool(child)),
        )
    ]


TARGETS_MS: dict[str, dict[int, float]] = {
    "session/history": {10_000: 50.0, 100_000: 500.0},
    "session/load": {10_000: 100.0, 100_000: 1000.0},
}
"""Issue 17's targets, cold (reopened after ``session/close``) and warm."""


def _history_rows(
    conn: Connection, peer: Connection, sid: str, n: int, reps: int, cold_reps: int
) -> list[Row]:
    """Threadline's rows; the peer (the same server without issue 17's caches, same
    data folder) is timed right after each case for the same-run comparison."""
    replayed = [0]

    def count(params: dict[str, Any], t: int) -> None:
        replayed[0] += params.get("sessionId") == sid

    calls = {
        "session/history": {"sessionId": sid},
        "session/load": {"sessionId": sid, "cwd": "/tmp", "mcpServers": []},
    }
    out: list[Row] = []
    conn.on_update = count
    for method, params in calls.items():
        target_ms = TARGETS_MS[method].get(n)
        target = f"< {ms(target_ms)} (cold and warm)" if target_ms else ""
        replayed[0] = 0
        first = _cold(conn, sid, method, params)
        notifications = replayed[0]
        colds = [first] + [_cold(conn, sid, method, params) for _ in range(cold_reps - 1)]
        cold = summarize(r.received_ms for r in colds)
        runs = [_timed(conn, method, params) for _ in range(reps)]
        warm = summarize(r.received_ms for r in runs)
        parse = summarize(r.parsed_ms - r.received_ms for r in runs)
        peer.on_update = count
        peer_cold = summarize(
            _cold(peer, sid, method, params).received_ms for _ in range(cold_reps)
        )
        peer_warm = summarize(_timed(peer, method, params).received_ms for _ in range(reps))
        peer.on_update = None
        versus = (
            f"{ratio(warm.ratio(peer_warm))} warm · {ratio(cold.ratio(peer_cold))} cold "
            f"vs the same server without the caches ({ms(peer_warm.p50)} · {ms(peer_cold.p50)})"
        )
        if method == "session/history":
            got = f"{len((first.result or {}).get('messages', [])):,} messages"
        else:
            got = f"{notifications:,} notifications"
        out.append(
            Row(
                HISTORY,
                f"{method}, {n:,} messages",
                f"{ms(warm.p50)} warm · {ms(cold.p50)} cold",
                f"{_spread(warm, 'warm')}; {_spread(cold, 'cold')}",
                f"{got}, {first.bytes_in / 1e6:.1f} MB; client JSON parse +{ms(parse.p50)}; "
                + versus,
                target,
                verdict(max(cold.p50, warm.p50) < target_ms) if target_ms else "",
            )
        )
    conn.on_update = None
    return out


def _fresh_rows(home: Path, sizes: list[int], ids: list[str], reps: int) -> list[Row]:
    """The first call on a session in a server just started: nothing folded or cached,
    the store read from disk (through the page cache)."""
    out: list[Row] = []
    for method in ("session/history", "session/load"):
        for n, sid in zip(sizes, ids, strict=True):
            times: list[float] = []
            for _ in range(reps):
                conn = spawn(THREADLINE, home)
                try:
                    conn.call("session/list", {})  # the imports after initialize are done
                    params = {"sessionId": sid}
                    if method == "session/load":
                        params |= {"cwd": "/tmp", "mcpServers": []}
                    times.append(_timed(conn, method, params).received_ms)
                finally:
                    conn.close()
            s = summarize(times)
            out.append(
                Row(
                    HISTORY,
                    f"{method}, {n:,} messages, first call in a fresh server",
                    ms(s.p50),
                    f"{ms(s.min)}–{ms(s.max)} (n={s.n})",
                )
            )
    return out


def run(ctx: Context) -> list[Row]:
    sizes = [10, 1_000, 10_000, 100_000] if not ctx.quick else [10, 1_000, 10_000]
    home = ctx.scratch.home("forkload")
    ctx.log(f"fork/history: writing sessions of {sizes} messages")
    first, *ids = fill(home, [2, *sizes])
    conn = spawn(THREADLINE, home)
    peer = spawn(THREADLINE_UNCACHED, home)
    fork_rows: list[Row] = []
    history_rows: list[Row] = []
    try:
        try:
            once = _timed(conn, "session/fork", {"sessionId": first})
            fork_rows.append(
                Row(
                    FORK,
                    "first fork after start (builds deferred models), 2 messages",
                    ms(once.received_ms),
                )
            )
        except RpcError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise
        for n, sid in zip(sizes, ids, strict=True):
            reps = ctx.n(20 if n <= 10_000 else 5, 3)
            cold_reps = ctx.n(5 if n <= 10_000 else 3, 2)
            fork_rows += _fork_rows(conn, home, sid, n, reps, cold_reps)
            history_rows += _history_rows(conn, peer, sid, n, reps, cold_reps)
            ctx.log(f"fork/history: {n:,} messages done")
    finally:
        conn.close()
        peer.close()
    history_rows += _fresh_rows(home, sizes, ids, ctx.n(3, 1))
    return fork_rows + history_rows
