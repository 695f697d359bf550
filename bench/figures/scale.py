"""A team store at scale: many sidecars prompting at once on one PostgreSQL (issue 31).

``S`` sidecar processes (editor windows) × ``N`` sessions each, on one throw-away
PostgreSQL cluster on loopback (``tests/pgserver``, ``fsync`` off): every session is
sent a prompt at the same moment, each answered by a scripted stream of 20 words
10 ms apart (200 ms of the model's own time). One more sidecar (a watching window)
has loaded one session of each of the others and shows their turns as they stream.

Measured: each prompt's time to its first chunk and to its answer (p50 / p99; the
stream's own 200 ms is the floor of the latter), the notification latency (a chunk
read by its owner's client → the same chunk read by the watching window's client),
the database connections in use (``pg_stat_activity``, sampled every 50 ms, the
most seen), and nothing lost: every owner's client read the whole answer, and every
session's stored history holds it.

Heavy by design (50 × 20 is 51 processes): not part of a plain ``python -m bench``;
run it with ``--only scale`` and choose the size with ``--scale SxN`` (default
50x20; ``--quick``: 3x2).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from tests.pgserver import PgServer

from ..context import Context
from ..report import Row
from ..servers import THREADLINE, new_session, prompt_params, spawn
from ..stats import ms, summarize
from ..wire import Connection

FIGURE = "team store at scale"
WORDS = 20
EXPECTED = "".join(f"w{i} " for i in range(WORDS))


def _model() -> str:
    steps: list[dict[str, Any]] = []
    for i in range(WORDS):
        steps += [{"text": f"w{i} "}, {"sleep": 0.01}]
    return "scripted:" + json.dumps({"rounds": [steps]})


class _Chunks:
    """Each session's chunks as one client reads them: the text, and when each was read."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.text: dict[str, list[str]] = {}
        self.first: dict[str, int] = {}
        self.at: dict[str, list[tuple[int, int]]] = {}
        """Per session: (characters read so far, when), one per chunk."""

    def on_update(self, params: dict[str, Any], t: int) -> None:
        u = params.get("update") or {}
        if u.get("sessionUpdate") != "agent_message_chunk":
            return
        sid = str(params.get("sessionId"))
        text = str((u.get("content") or {}).get("text", ""))
        with self.lock:
            self.text.setdefault(sid, []).append(text)
            self.first.setdefault(sid, t)
            at = self.at.setdefault(sid, [])
            at.append(((at[-1][0] if at else 0) + len(text), t))


def _followed(owner: list[tuple[int, int]], follower: list[tuple[int, int]]) -> list[float]:
    """For each chunk the owner's client read, ms until the other window's client had
    read as far (the two coalesce chunks differently: paired by position)."""
    out: list[float] = []
    j = 0
    for end, t in owner:
        while j < len(follower) and follower[j][0] < end:
            j += 1
        if j == len(follower):
            break
        out.append((follower[j][1] - t) / 1e6)
    return out


def _connections(url: str, stop: threading.Event, out: list[int]) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        while not stop.wait(0.05):
            row = db.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            ).fetchone()
            out.append(int(row[0]) if row else 0)


def _measure(ctx: Context, url: str, sidecars: int, per: int) -> dict[str, Any]:
    home = ctx.scratch.home("scale")
    env = {"THREADLINE_STORE": url}
    conns: list[Connection] = []
    owners: list[_Chunks] = []
    watcher_chunks = _Chunks()
    watcher: Connection | None = None
    try:
        for i in range(sidecars):
            (home / f"sidecar-{i}").mkdir()
            conn = spawn(THREADLINE, home / f"sidecar-{i}", env=env)
            chunks = _Chunks()
            conn.on_update = chunks.on_update
            conns.append(conn)
            owners.append(chunks)
        model = _model()
        for conn in conns:  # a window in use: the first turn's imports are done
            conn.call("session/prompt", prompt_params(new_session(conn, model)), timeout=300)
        sessions = [
            (c, o, new_session(c, model, builtinTools=False))
            for c, o in zip(conns, owners, strict=True)
            for _ in range(per)
        ]
        ctx.log(f"scale: {sidecars} sidecars × {per} sessions started")
        (home / "watcher").mkdir()
        watcher = spawn(THREADLINE, home / "watcher", env=env)
        watcher.on_update = watcher_chunks.on_update
        watched = [sessions[i * per][2] for i in range(sidecars)]
        for sid in watched:
            watcher.call("session/load", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
        stop = threading.Event()
        counts: list[int] = []
        sampler = threading.Thread(target=_connections, args=(url, stop, counts), daemon=True)
        sampler.start()
        t0 = time.perf_counter()
        pending = [
            (c, o, sid, c.send("session/prompt", prompt_params(sid))) for c, o, sid in sessions
        ]
        for *_, p in pending:
            p.wait(900)
        wall = (time.perf_counter() - t0) * 1000
        time.sleep(1.0)  # the watching window's last chunks
        stop.set()
        sampler.join(5)
        first = [(o.first[sid] - p.t_sent) / 1e6 for _c, o, sid, p in pending if sid in o.first]
        answered = [p.received_ms for *_, p in pending]
        shown_whole = sum("".join(o.text.get(sid, [])) == EXPECTED for _c, o, sid, _p in pending)
        stored_whole = 0
        for _c, _o, sid, _p in pending:
            history = watcher.call("session/history", {"sessionId": sid}, timeout=120)["messages"]
            texts = [
                "".join(b.get("text", "") for b in m["content"] if b.get("type") == "text")
                for m in history
                if m["role"] == "assistant"
            ]
            stored_whole += texts == [EXPECTED]
        notify: list[float] = []
        for i, sid in enumerate(watched):
            owner = owners[i]
            with owner.lock, watcher_chunks.lock:
                notify += _followed(owner.at.get(sid, []), watcher_chunks.at.get(sid, []))
        watched_whole = sum(
            "".join(watcher_chunks.text.get(sid, [])) == EXPECTED for sid in watched
        )
        return {
            "first": first,
            "answered": answered,
            "wall": wall,
            "notify": notify,
            "connections": max(counts, default=0),
            "shown": shown_whole,
            "stored": stored_whole,
            "watched": watched_whole,
            "prompts": len(pending),
        }
    finally:
        for c in [*conns, *([watcher] if watcher is not None else [])]:
            c.close(timeout=30)


def _row(case: str, values: list[float], compare: str = "") -> Row:
    s = summarize(values)
    return Row(FIGURE, case, ms(s.p50), f"p99 {ms(s.p99)} · max {ms(s.max)} (n={s.n})", compare)


def run(ctx: Context) -> list[Row]:
    sidecars, per = ctx.scale or ((3, 2) if ctx.quick else (50, 20))
    server = PgServer()
    try:
        r = _measure(ctx, server.new_database(), sidecars, per)
    finally:
        server.close()
    size = f"{sidecars} sidecars × {per} sessions at once"
    n = r["prompts"]
    whole = r["shown"] == r["stored"] == n and r["watched"] == sidecars
    return [
        _row(f"prompt → first chunk, {size}", r["first"]),
        _row(
            f"prompt → answered, {size} (the stream itself: 200 ms)",
            r["answered"],
            f"all {n} answered in {ms(r['wall'])}",
        ),
        _row(
            f"notification: a chunk read by its owner → by another window ({sidecars} watched)",
            r["notify"],
        ),
        Row(
            FIGURE,
            "database connections in use (most seen)",
            str(r["connections"]),
            f"{sidecars + 1} sidecars and the sampler; max_connections 200",
        ),
        Row(
            FIGURE,
            "nothing lost",
            f"{r['shown']}/{n} answers whole on their client, {r['stored']}/{n} stored whole, "
            f"{r['watched']}/{sidecars} whole in the watching window",
            target="all",
            verdict="met" if whole else "MISSED",
        ),
    ]
