"""A window reads only the sessions another process changed (PostgreSQL: a streamed
turn's writes name their session in the notification, `store.pgchanges`); a write
that names none still makes it look at every session it shows."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from tests.engine.test_queue_reads import new_session
from tests.tools.fakes import FakeEditor
from threadline.engine.engine import Engine
from threadline.providers.registry import ProviderRegistry
from threadline.store.postgres import PostgresStore


@contextlib.asynccontextmanager
async def two_processes(pg_url: str) -> AsyncIterator[tuple[Engine, PostgresStore]]:
    """An engine on a PostgreSQL store, and the store of another process on the same
    database (its writes are heard as another sidecar's)."""
    store = PostgresStore(pg_url)
    store.ready(10)
    other = PostgresStore(pg_url)
    engine = Engine(store, ProviderRegistry(), FakeEditor())
    try:
        yield engine, other
    finally:
        await engine.shutdown()
        other.close()
        store.close()


async def until(what: str, condition: Callable[[], bool], seconds: float = 20) -> None:
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_window_reads_only_the_sessions_changed_elsewhere(
    pg_url: str, tmp_path: Path
) -> None:
    async with two_processes(pg_url) as (engine, other):
        store = engine.store
        looks: list[set[str]] = []
        watch = store.watch

        def counted(session_ids: Sequence[str]) -> Any:
            looks.append(set(session_ids))
            return watch(session_ids)

        store.watch = counted  # type: ignore[method-assign]
        one = new_session(engine, tmp_path, "scripted:echo")
        two = new_session(engine, tmp_path, "scripted:echo")
        shown = {sid: engine.get(sid).shown for sid in (one, two)}
        await engine.feed.next_round(1.0)
        await asyncio.sleep(0.3)
        looks.clear()

        # Another process's title and journal for `one`: only `one` is read, and shown.
        other.update_session(one, title="named elsewhere")
        other.append_chunks(one, [("text", "streamed elsewhere")])
        await until("the title shown", lambda: shown[one].title == "named elsewhere")
        await asyncio.sleep(0.3)
        assert looks
        assert all(ids == {one} for ids in looks), looks

        # A write of the shared path names no session: both are read.
        looks.clear()
        other.create_session("made-elsewhere", str(tmp_path), {}, "t0")
        await until("a look at both", lambda: {one, two} in looks)

        # And `two`, changed elsewhere, is read and shown too.
        looks.clear()
        other.update_session(two, title="two, elsewhere")
        await until("the second title shown", lambda: shown[two].title == "two, elsewhere")
        assert all(ids == {two} for ids in looks), looks


async def test_a_request_reads_its_session_again_only_when_it_changed_elsewhere(
    pg_url: str, tmp_path: Path
) -> None:
    """Before a request works on a session the engine catches it up with other
    processes' commits (`LiveSessions.sync`); on a store where other sidecars stream
    all the time, the session's row is read only when a change named it."""
    async with two_processes(pg_url) as (engine, other):
        store = engine.store
        reads: list[str] = []
        get_session = store.get_session

        def counted(session_id: str, include_deleted: bool = False) -> Any:
            reads.append(session_id)
            return get_session(session_id, include_deleted)

        one = new_session(engine, tmp_path, "scripted:echo")
        two = new_session(engine, tmp_path, "scripted:echo")
        store.get_session = counted  # type: ignore[method-assign]
        for n in range(3):
            other.update_session(two, title=f"busy elsewhere {n}")
            other.append_chunks(two, [("text", f"chunk {n}")])
            engine.live.sync(engine.live.sessions[one])
        assert one not in reads
        other.update_session(one, title="renamed elsewhere")
        assert engine.live.sync(engine.live.sessions[one]).title == "renamed elsewhere"
        assert reads == [one]
        engine.live.sync(engine.live.sessions[two])
        assert two in reads  # named since it was current
        reads.clear()
        other.create_session("made-elsewhere", str(tmp_path), {}, "t0")  # names none
        engine.live.sync(engine.live.sessions[one])
        assert reads == [one]
