"""`session/fork` through the engine: the store's fork is one row, and answering it
must not fold the parent's log (a fork of a long session answered in milliseconds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.engine.fakes import echo_session
from tests.tools.fakes import FakeEditor
from threadline.engine.engine import Engine
from threadline.providers.registry import ProviderRegistry
from threadline.store.sqlite import EventStore
from threadline_protocol import methods as pm


class Reads:
    """The events the store was asked for, per call."""

    def __init__(self, store: EventStore) -> None:
        self.counts: list[int] = []
        self._load = store.load_events

        def counted(*args: Any, **kwargs: Any) -> Any:
            got = list(self._load(*args, **kwargs))
            self.counts.append(len(got))
            return got

        store.load_events = counted  # type: ignore[method-assign]


async def test_a_fork_answers_without_folding_the_parents_log(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "threadline.db")
    engine = Engine(store, ProviderRegistry(), FakeEditor())
    sid = echo_session(engine, str(tmp_path))
    try:
        for n in range(3):
            await engine.prompt(
                pm.PromptParams.model_validate(
                    {"sessionId": sid, "prompt": [{"type": "text", "text": f"question {n}"}]}
                )
            )
        parent = engine.get(sid)
        first = parent.transcript.messages[1]["messageId"]
        reads = Reads(store)

        at_end = engine.fork(pm.ForkParams.model_validate({"sessionId": sid}))
        assert isinstance(at_end, pm.ForkResult)
        assert sum(reads.counts) <= 1  # the fork's own events, the parent's copied
        assert at_end.session_id in engine.live.sessions
        assert at_end.config_options and at_end.modes is not None

        reads.counts.clear()
        earlier = engine.fork(pm.ForkParams.model_validate({"sessionId": sid, "messageId": first}))
        assert isinstance(earlier, pm.ForkResult)
        assert earlier.forked_at_message_id is not None
        assert sum(reads.counts) == 0  # opened (folded) when first used, not to answer
        assert earlier.session_id not in engine.live.sessions
        assert [o.current_value for o in earlier.config_options or []] == [
            o.current_value for o in at_end.config_options or []
        ]
        # used later, it holds the parent's messages up to the fork point
        child = engine.get(earlier.session_id)
        assert len(child.transcript.messages) == 2
        assert len(engine.get(at_end.session_id).transcript.messages) == 6
    finally:
        await engine.shutdown()
        store.close()
