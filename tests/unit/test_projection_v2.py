"""What the v2 projection keeps per connection (``rpc/v2/projection.py``): a state is
shown once per change, the idle that ends work is the one with the stop reason, and a
running call's output is appended only while it grows."""

from __future__ import annotations

from typing import Any

from tests.golden.samples import CALL, MID, NOW
from threadline.engine import events
from threadline.rpc.v2.projection import ProjectionV2, git_patch

SID = "sess_1"


def shown(*happened: events.Event) -> list[dict[str, Any]]:
    projection = ProjectionV2()
    return [u for e in happened for u in projection.session_updates(SID, e)]


def states(updates: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [
        (u["state"], u.get("stopReason")) for u in updates if u["sessionUpdate"] == "state_update"
    ]


def text(t: str) -> tuple[dict[str, Any], ...]:
    return ({"type": "content", "content": {"type": "text", "text": t}},)


def test_one_running_one_idle_with_its_stop_reason() -> None:
    made = shown(
        events.SessionInfo(NOW, state="running"),
        events.MessageChunk(MID, "a1", "Hi"),
        events.SessionInfo(NOW, state="compacting"),
        events.WorkEnded("max_tokens"),
        events.SessionInfo(NOW, state="idle"),
    )
    assert states(made) == [("running", None), ("idle", "max_tokens")]


def test_output_after_idle_shows_running_again() -> None:
    made = shown(events.WorkEnded("end_turn"), events.MessageChunk(MID, "a2", "More"))
    assert states(made) == [("idle", "end_turn"), ("running", None)]


def test_a_remote_turn_ends_idle_without_a_reason() -> None:
    made = shown(events.SessionInfo(NOW, state="running"), events.SessionInfo(NOW, state="idle"))
    assert states(made) == [("running", None), ("idle", None)]


def test_output_that_only_grows_is_appended_else_replaced() -> None:
    made = shown(
        events.ToolProgress(CALL, text("a")),
        events.ToolProgress(CALL, text("ab")),
        events.ToolProgress(CALL, text("xyz")),
    )
    assert [u["sessionUpdate"] for u in made] == [
        "tool_call_update",
        "tool_call_content_chunk",
        "tool_call_update",
    ]
    assert made[1]["content"]["content"]["text"] == "b"
    assert made[2]["content"] == list(text("xyz"))


def test_a_new_file_is_an_add_with_a_patch_from_dev_null() -> None:
    patch = git_patch("/p/new.txt", None, "one\n")
    assert patch.splitlines()[:4] == [
        "diff --git /p/new.txt /p/new.txt",
        "new file mode 100644",
        "--- /dev/null",
        "+++ /p/new.txt",
    ]
    assert patch.endswith("+one\n")
