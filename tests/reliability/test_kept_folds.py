"""A long session opens from its kept fold after any exit (issue 31, ``engine/folds.py``).

A session grown by prompting is written to the store's fold as it grows and when the
sidecar shuts down, so the next process reads that one value instead of folding the
log. The proof removes events behind the store's back: what the next process still
answers can only have come from the kept fold.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import SidecarClient, start_sidecar
from threadline.engine.folds import STORE_AFTER

TURNS = STORE_AFTER // 2 + 150
"""Enough prompts (two events each) that the fold is written as the session grows."""


@pytest.fixture(autouse=True)
def shared_store(store_url: str | None, monkeypatch: pytest.MonkeyPatch) -> str | None:
    if store_url is not None:
        monkeypatch.setenv("THREADLINE_STORE", store_url)
    return store_url


def _sql(home: Path, url: str | None, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Straight to the database (``?`` placeholders, table names without a prefix)."""
    if url is None:
        import sqlite3

        db = sqlite3.connect(home / "threadline.db")
        try:
            with db:
                return db.execute(sql, args).fetchall()
        finally:
            db.close()
    import psycopg

    assert url is not None
    for table in ("sessions", "events", "folds"):
        sql = sql.replace(f" {table}", f" tl_{table}")
    with psycopg.connect(url, autocommit=True) as db:
        cur = db.execute(sql.replace("?", "%s"), args)  # pyright: ignore[reportArgumentType]
        return cur.fetchall() if cur.description else []


def _kept(home: Path, url: str | None, sid: str) -> tuple[int, int]:
    """(the kept fold's sequence number or 0, the session's last sequence number)."""
    fold = _sql(home, url, "SELECT seq FROM folds WHERE session_id=?", (sid,))
    last = _sql(home, url, "SELECT last_seq FROM sessions WHERE id=?", (sid,))
    return (int(fold[0][0]) if fold else 0), int(last[0][0])


async def _history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


async def _grown_then(
    home: Path, stop: Callable[[SidecarClient], Awaitable[None]]
) -> tuple[str, list[dict[str, Any]]]:
    """A session grown by `TURNS` prompts in a sidecar that ``stop`` then ends; the
    session and its history as that sidecar answered it."""
    a = await start_sidecar(home)
    try:
        sid = await a.new_session(model="scripted:echo", builtinTools=False)
        for i in range(TURNS):
            await a.prompt(sid, f"turn {i}")
        before = await _history(a, sid)
        await stop(a)
    finally:
        await a.stop()
    return sid, before


async def _exit(a: SidecarClient) -> None:
    await a.call("shutdown")
    a.notify("exit")
    assert a._server is not None
    assert await asyncio.wait_for(a._server.wait(), 30) == 0


async def _kill(a: SidecarClient) -> None:
    await asyncio.sleep(1.0)  # a fold write under way finishes (it is a worker's)
    assert a._server is not None
    os.kill(a._server.pid, signal.SIGKILL)
    await a._server.wait()


async def test_after_shutdown_and_exit_the_next_sidecar_reads_the_kept_fold(
    home: Path, store_url: str | None
) -> None:
    sid, before = await _grown_then(home, _exit)
    fold, last = _kept(home, store_url, sid)
    assert fold == last == 2 * TURNS, "the fold is whole when the sidecar exits normally"
    # Only the kept fold can answer now: the log is gone.
    _sql(home, store_url, "DELETE FROM events WHERE session_id=?", (sid,))
    b = await start_sidecar(home)
    try:
        assert await _history(b, sid) == before
        await b.call("session/load", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
        replayed = [u for u in b.updates if u["sessionId"] == sid]
        texts = [
            u["update"]["content"]["text"]
            for u in replayed
            if u["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        assert texts == [f"turn {i} " for i in range(TURNS)], "replayed from the fold"
    finally:
        await b.stop()


async def test_after_kill_9_the_kept_fold_is_a_bounded_number_of_events_behind(
    home: Path, store_url: str | None
) -> None:
    sid, before = await _grown_then(home, _kill)
    fold, last = _kept(home, store_url, sid)
    assert last == 2 * TURNS
    assert fold > 0 and last - fold < STORE_AFTER, (fold, last)
    # The next sidecar restores the fold and folds only the events after it.
    _sql(home, store_url, "DELETE FROM events WHERE session_id=? AND seq<=?", (sid, fold))
    b = await start_sidecar(home)
    try:
        assert await _history(b, sid) == before
    finally:
        await b.stop()
