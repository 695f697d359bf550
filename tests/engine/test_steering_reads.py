"""A turn looks for steering prompts before and after each model call; on PostgreSQL
each look was a round trip. It now reads the queue only when a prompt may have come:
one sent in this process, or a change another process made that names the session
(or that the store cannot place). Prompts sent to steer still join, from here and
from another process."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.engine.test_feed_scope import two_processes, until
from tests.engine.test_queue_reads import QueueReads, new_session, prompt, settled
from tests.support import scripted
from tests.tools.fakes import FakeEditor
from threadline.engine.engine import Engine
from threadline.engine.ids import new_id, now_iso
from threadline.providers.registry import ProviderRegistry
from threadline.store.sqlite import EventStore
from threadline_protocol import methods as pm


def said(engine: Engine, sid: str) -> list[tuple[str, str]]:
    return [
        (m["role"], "".join(b.get("text", "") for b in m["content"]))
        for m in engine.get(sid).transcript.messages
    ]


def turns(engine: Engine, sid: str) -> list[str]:
    """Each message's turn number (``u3``, ``a3``: 3): a steering prompt that joined
    is in the running turn's (one that missed it runs after as a turn of its own, with
    the same text)."""
    return [str(m["turnId"])[1:] for m in engine.get(sid).transcript.messages]


async def started(engine: Engine, sid: str) -> None:
    await until("the turn running", lambda: engine.get(sid).running is not None)


async def warmed(engine: Engine, cwd: Path) -> tuple[str, QueueReads]:
    """A session that ran a turn, and the queue reads counted from then on."""
    sid = new_session(engine, cwd, "scripted:echo")
    await prompt(engine, sid, "warm up")
    await settled(engine)
    return sid, QueueReads(engine.store)


SLOW = scripted([{"text": "first "}, {"sleep": 0.6}, {"text": "done"}])


async def test_postgres_turns_read_the_queue_only_when_a_prompt_may_have_come(
    pg_url: str, tmp_path: Path
) -> None:
    async with two_processes(pg_url) as (engine, other):
        store = engine.store
        sid, reads = await warmed(engine, tmp_path)
        for n in range(3):
            assert (await prompt(engine, sid, f"question {n}")).stop_reason == "end_turn"
            await settled(engine)
        # A new session's first turn: the feed's look as the turn starts read its
        # queue already.
        fresh = new_session(engine, tmp_path, "scripted:echo")
        assert (await prompt(engine, fresh, "first")).stop_reason == "end_turn"
        await settled(engine)
        # Nothing was sent to the sessions meanwhile: no look for steering read the
        # queue (SQLite's turns read it twice each, test_queue_reads).
        assert reads.sessions == []

        # Another process sends a prompt to steer a running turn: once heard, the
        # look after the answer reads the queue and the prompt joins the turn.
        slow = new_session(engine, tmp_path, SLOW)
        turn = asyncio.ensure_future(prompt(engine, slow, "one"))
        await started(engine, slow)
        token = store.peek_token()
        other.add_pending(
            slow,
            new_id("msg"),
            "steer",
            [{"type": "text", "text": "from elsewhere"}],
            engine.live.owner.id,
            now_iso(),
        )
        await until("the change heard", lambda: slow in (store.changed_since(token) or {slow}))
        assert (await turn).stop_reason == "end_turn"
        assert said(engine, slow) == [
            ("user", "one"),
            ("assistant", "first done"),
            ("user", "from elsewhere"),
            ("assistant", "first done"),
        ]
        assert len(set(turns(engine, slow))) == 1
        assert slow in reads.sessions

        # A prompt sent to steer in this process is not heard on the feed: it is read
        # all the same, and joins.
        await settled(engine)
        turn = asyncio.ensure_future(prompt(engine, slow, "two"))
        await started(engine, slow)
        steer = asyncio.ensure_future(
            engine.prompt(
                pm.PromptParams.model_validate(
                    {
                        "sessionId": slow,
                        "prompt": [{"type": "text", "text": "from here"}],
                        "_meta": {"threadline": {"whileRunning": "steer"}},
                    }
                )
            )
        )
        await until("the steer waiting", lambda: bool(engine.store.pending(slow)))
        assert (await turn).stop_reason == "end_turn"
        await asyncio.wait_for(steer, 30)
        assert said(engine, slow)[-4:] == [
            ("user", "two"),
            ("assistant", "first done"),
            ("user", "from here"),
            ("assistant", "first done"),
        ]
        assert len(set(turns(engine, slow)[-4:])) == 1


async def test_sqlite_turns_read_the_queue_at_every_look(tmp_path: Path) -> None:
    """SQLite cannot say which session another process changed: every look reads (a
    read in process, not a round trip)."""
    store = EventStore(tmp_path / "threadline.db")
    engine = Engine(store, ProviderRegistry(), FakeEditor())
    try:
        sid, reads = await warmed(engine, tmp_path)
        assert (await prompt(engine, sid, "question")).stop_reason == "end_turn"
        await settled(engine)
        assert reads.count == 2
    finally:
        await engine.shutdown()
        store.close()
