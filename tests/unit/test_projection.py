"""Engine events as a client is shown them (``rpc/projection.py``): every golden
``session/update`` a live event can make comes out of its event unchanged, and what a
client does not show (compactions, for one that did not ask) stays out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.golden.samples import CALL, CMP, MID, NOW, READ, RESULT, SUMMARY, config_options
from threadline.engine import events
from threadline.rpc.projection import Projection

UPDATES = Path(__file__).resolve().parent.parent / "golden" / "session_update"

# The live event each golden fixture is shown for, and whether the client shows compactions.
EVENTS: dict[str, tuple[events.Event, bool]] = {
    "agent_message_chunk": (events.MessageChunk(MID, "a1", "It prints"), True),
    "agent_thought_chunk": (events.MessageChunk(MID, "a1", "Read it.", thought=True), True),
    "tool_call": (events.ToolCallStarted(READ, "a1"), True),
    "tool_call.exit_signal": (
        events.ToolCallStarted(
            {"type": "exit_signal", "id": CALL, "name": "task_done", "arguments": {"ok": True}},
            "a1",
        ),
        True,
    ),
    "tool_call_update": (events.ToolFinished(RESULT), True),
    "tool_call_update.in_progress": (events.ToolProgress(CALL), True),
    "tool_call_update.cancelled": (
        events.ToolFinished(
            {
                **RESULT,
                "content": [
                    {"type": "text", "text": "Tool call cancelled: cancelled by the user."}
                ],
                "isError": True,
                "status": "cancelled",
                "rawOutput": None,
            }
        ),
        True,
    ),
    "usage_update": (events.Usage(876, 8192), True),
    "config_option_update": (events.ConfigOptions(config_options()), False),
    "current_mode_update": (events.ModeChanged("plan"), False),
    "session_info_update": (events.SessionInfo(NOW, title="Read main.py"), True),
    "session_info_update.status": (events.SessionInfo(NOW, status="retrying in 2 s"), True),
    "available_commands_update": (
        events.AvailableCommands(
            (
                ("compact", "Summarise older history", "optional instructions"),
                ("fork", "Fork", None),
            )
        ),
        True,
    ),
    "compaction_update": (events.Compacted(MID, "a1", SUMMARY), True),
    "agent_message_chunk.summary": (events.Compacted(MID, "a1", SUMMARY), False),
    "compaction_update.failed": (
        events.CompactionProgress(CMP, "failed", "the model wrote an empty summary"),
        True,
    ),
}


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_a_live_event_is_shown_as_its_golden_update(name: str) -> None:
    event, shows = EVENTS[name]
    golden = json.loads((UPDATES / f"{name}.json").read_text())["update"]
    assert Projection(shows_compaction=shows).updates(event) == [golden]


def test_compaction_progress_is_not_shown_to_a_client_that_did_not_ask() -> None:
    event = events.CompactionProgress(CMP, "in_progress")
    assert Projection.for_client({}).updates(event) == []
    shown = Projection.for_client({"session": {"compaction": {}}})
    assert shown.variant is True
    assert shown.updates(event) == [
        {"sessionUpdate": "compaction_update", "compactionId": CMP, "status": "in_progress"}
    ]


def test_a_status_notice_is_an_acp_notice_only_for_a_client_that_opted_in() -> None:
    """``notice`` is unstable: a client that advertised ``session.notices`` gets it
    beside the ``session_info_update``; a stable-only client never does."""
    event = events.SessionInfo(NOW, status="retrying in 2 s")
    info = json.loads((UPDATES / "session_info_update.status.json").read_text())["update"]
    notice = json.loads((UPDATES / "notice.json").read_text())["update"]
    assert Projection.for_client({}).updates(event) == [info]
    assert Projection.for_client({"session": {"compaction": {}}}).updates(event) == [info]
    assert Projection.for_client({"session": {"notices": None}}).updates(event) == [info]
    opted = Projection.for_client({"session": {"notices": {}}})
    assert opted.updates(event) == [info, notice]
    assert opted.updates(events.SessionInfo(NOW, title="t")) == [
        {"sessionUpdate": "session_info_update", "updatedAt": NOW, "title": "t"}
    ]


def test_a_replayed_message_is_shown_as_session_load_shows_it() -> None:
    message = {
        "messageId": MID,
        "turnId": "a1",
        "role": "assistant",
        "content": [{"type": "text", "text": "Reading."}, READ],
        "truncated": True,
    }
    projection = Projection(shows_compaction=False)
    replayed = projection.updates(events.Replayed(message))
    assert replayed == projection.replay(message)
    assert [u["sessionUpdate"] for u in replayed] == ["agent_message_chunk", "tool_call"]
    assert replayed[0]["_meta"] == {"threadline": {"turnId": "a1", "truncated": True}}
