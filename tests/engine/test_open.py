"""Opening a session in a fresh process: what it asks the store for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.engine.fakes import echo_session
from tests.tools.fakes import FakeEditor
from threadline.engine.engine import Engine
from threadline.providers.registry import ProviderRegistry
from threadline.store.sqlite import EventStore
from threadline_protocol import methods as pm


def journal_reads(store: EventStore) -> list[str]:
    """The sessions whose stream journal `store` is asked for, in order."""
    asked: list[str] = []
    read = store.inflight_stream

    def counted(session_id: str) -> Any:
        asked.append(session_id)
        return read(session_id)

    store.inflight_stream = counted  # type: ignore[method-assign]
    return asked


async def test_a_sessions_journal_is_read_on_opening_only_when_its_row_says_it_has_one(
    tmp_path: Path,
) -> None:
    """A session's opening reads its row, and with it whether an answer was being
    streamed (`SessionRow.streaming`): without one the journal is not asked for (a
    round trip less on PostgreSQL); with one a dead process left, it is read and what
    was streamed is kept (the repair)."""
    path = tmp_path / "threadline.db"
    store = EventStore(path)
    engine = Engine(store, ProviderRegistry(), FakeEditor())
    sid = echo_session(engine, str(tmp_path))
    await engine.prompt(
        pm.PromptParams.model_validate(
            {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        )
    )
    await engine.shutdown()
    store.close()

    fresh = EventStore(path)
    asked = journal_reads(fresh)
    opened = Engine(fresh, ProviderRegistry(), FakeEditor()).live.open(sid)
    assert asked == [] and len(opened.transcript) == 2
    fresh.close()

    # a process died while streaming the answer to a second prompt
    dying = EventStore(path)
    turn = {
        "message": {
            "messageId": "u2",
            "turnId": "u2",
            "role": "user",
            "createdAt": "",
            "content": [{"type": "text", "text": "more"}],
        }
    }
    from threadline.store.base import NewEvent

    dying.append(sid, [NewEvent("user_message", turn, ("u2",))], "t2")
    dying.begin_stream(sid, "a2", {"turnId": "u2"})
    dying.append_chunks(sid, [("text", "half an ans")])
    dying.close()

    fresh = EventStore(path)
    asked = journal_reads(fresh)
    opened = Engine(fresh, ProviderRegistry(), FakeEditor()).live.open(sid)
    assert asked and asked[0] == sid
    last = opened.transcript.messages[-1]
    assert last["role"] == "assistant" and "half an ans" in str(last["content"])
    assert fresh.inflight_stream(sid) is None
    fresh.close()
