"""How often a turn reads the prompt queue (`store.pending`) on SQLite: at its two
looks for steering, before its model call and at the end of its answer (on PostgreSQL,
which can say which sessions another process changed, only when a prompt may have come:
test_steering_reads). After the work ends, the feed's look at the store (`watch`, which
reads each shown session's queue anyway) answers whether anything waits to run next;
the queue is read again only when something does, and what waits still runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.support import scripted
from tests.tools.fakes import FakeEditor
from threadline.engine.engine import Engine
from threadline.providers.registry import ProviderRegistry
from threadline.store.base import SessionStore
from threadline.store.sqlite import EventStore
from threadline_protocol import methods as pm


class QueueReads:
    """The store's reads of a session's prompt queue: which sessions', in order."""

    def __init__(self, store: SessionStore) -> None:
        self.sessions: list[str] = []
        read = store.pending

        def counted(session_id: str) -> Any:
            self.sessions.append(session_id)
            return read(session_id)

        store.pending = counted  # type: ignore[method-assign]

    @property
    def count(self) -> int:
        return len(self.sessions)


def new_session(engine: Engine, cwd: Path, model: str) -> str:
    created = engine.new_session(
        pm.NewSessionParams.model_validate(
            {"cwd": str(cwd), "mcpServers": [], "_meta": {"threadline": {"model": model}}}
        )
    )
    assert isinstance(created, pm.NewSessionResult)
    return created.session_id


def prompt(engine: Engine, sid: str, text: str) -> Any:
    return engine.prompt(
        pm.PromptParams.model_validate(
            {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
        )
    )


async def settled(engine: Engine) -> None:
    """Until the work that ran after the last turn (what waited) is done."""
    for _ in range(1500):
        await asyncio.sleep(0.02)
        if not engine.inbox._tasks:  # pyright: ignore[reportPrivateUsage]
            return
    raise AssertionError("the inbox never settled")


async def test_a_turn_reads_the_queue_twice_and_not_after_it_ended(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "threadline.db")
    engine = Engine(store, ProviderRegistry(), FakeEditor())
    try:
        sid = new_session(engine, tmp_path, "scripted:echo")
        await prompt(engine, sid, "warm up")
        await settled(engine)
        reads = QueueReads(store)
        for n in range(3):
            assert (await prompt(engine, sid, f"question {n}")).stop_reason == "end_turn"
            await settled(engine)
        assert reads.count == 3 * 2
        assert len(engine.get(sid).transcript.messages) == 8
    finally:
        await engine.shutdown()
        store.close()


async def test_a_prompt_queued_while_a_turn_runs_still_runs_after_it(tmp_path: Path) -> None:
    """The look after the turn sees the queued prompt; the queue is read and it runs
    (before its sender's own next look could run it)."""
    store = EventStore(tmp_path / "threadline.db")
    engine = Engine(store, ProviderRegistry(), FakeEditor())
    try:
        slow = scripted([{"text": "first "}, {"sleep": 0.3}, {"text": "done"}])
        sid = new_session(engine, tmp_path, slow)
        first = asyncio.ensure_future(prompt(engine, sid, "one"))
        for _ in range(3000):
            if engine.get(sid).running is not None:
                break
            await asyncio.sleep(0.01)
        queued = engine.prompt(
            pm.PromptParams.model_validate(
                {
                    "sessionId": sid,
                    "prompt": [{"type": "text", "text": "two"}],
                    "_meta": {"threadline": {"whileRunning": "queue"}},
                }
            )
        )
        assert (await first).stop_reason == "end_turn"
        assert (await asyncio.wait_for(queued, 30)).stop_reason == "end_turn"
        said = [
            (m["role"], b.get("text"))
            for m in engine.get(sid).transcript.messages
            for b in m["content"]
        ]
        assert said == [
            ("user", "one"),
            ("assistant", "first done"),
            ("user", "two"),
            ("assistant", "first done"),
        ]
    finally:
        await engine.shutdown()
        store.close()
