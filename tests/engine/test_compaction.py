"""Compaction: the pure plan and rendering on a small transcript, then one run through
a fake host."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.fakes import FakeHost, scripted
from threadline.engine import compaction
from threadline.engine.compactor import Compaction
from threadline.engine.mutations import (
    AssistantMessage,
    ContextSummary,
    Msg,
    UserMessage,
)

pytestmark = pytest.mark.timeout(30)


def msg(mid: str, role: str, *content: dict[str, Any], turn: str | None = None) -> Msg:
    return {
        "messageId": mid,
        "turnId": turn or ("u" if role == "user" else "a") + mid[-1],
        "role": role,
        "content": list(content),
        "createdAt": "2026-11-24T00:00:00.000Z",
    }


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def three_turns() -> list[Msg]:
    return [
        msg("u1", "user", text("Fix the bug in main.py")),
        msg("a1", "assistant", text("Looking.")),
        msg("u2", "user", text("Also the tests")),
        msg("a2", "assistant", text("Done with tests.")),
        msg("u3", "user", text("Thanks")),
        msg("a3", "assistant", text("You're welcome.")),
    ]


def ids(messages: list[Msg]) -> list[str]:
    return [m["messageId"] for m in messages]


def test_plan_keeps_the_last_turns_and_cuts_at_a_turn_start() -> None:
    working = three_turns()
    cut = compaction.plan(working, 2, None)
    assert cut is not None
    assert ids(cut.summarize) == ["u1", "a1"]
    assert cut.keep_ids == ()
    assert cut.up_to_message_id == "a1"
    assert ids(cut.kept) == ["u2", "a2", "u3", "a3"]


def test_plan_keeps_the_task_message_verbatim() -> None:
    cut = compaction.plan(three_turns(), 1, "u1")
    assert cut is not None
    assert ids(cut.summarize) == ["a1", "u2", "a2"]
    assert cut.keep_ids == ("u1",)
    assert cut.up_to_message_id == "a2"
    assert ids(cut.kept) == ["u1", "u3", "a3"]


def test_plan_has_nothing_to_do_when_every_turn_is_kept() -> None:
    assert compaction.plan(three_turns(), 3, None) is None
    assert compaction.plan(three_turns(), 5, "u1") is None


def test_plan_over_the_limit_keeps_fewer_turns_then_the_task_too() -> None:
    working = three_turns()
    # Room for three verbatim messages: one turn stays, with the task.
    cut = compaction.plan(working, 2, "u1", lambda kept: len(kept) <= 3)
    assert cut is not None
    assert ids(cut.kept) == ["u1", "u3", "a3"]
    assert ids(cut.summarize) == ["a1", "u2", "a2"]
    # Room for one: no turn stays, the task does.
    cut = compaction.plan(working, 2, "u1", lambda kept: len(kept) <= 1)
    assert cut is not None
    assert ids(cut.kept) == ["u1"]
    assert cut.up_to_message_id == "a3"
    # No room at all: everything is summarised.
    cut = compaction.plan(working, 2, "u1", lambda kept: not kept)
    assert cut is not None
    assert ids(cut.summarize) == ids(working)
    assert cut.kept == []


def test_render_shows_calls_results_and_summaries_in_short() -> None:
    messages = [
        msg(
            "u1",
            "user",
            text("Read it"),
            {"type": "resource_link", "name": "a.py", "uri": "file:///a.py"},
        ),
        msg(
            "a1",
            "assistant",
            {"type": "thought", "text": "not shown"},
            {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.py"}},
        ),
        msg(
            "t1",
            "tool",
            {
                "type": "tool_result",
                "toolUseId": "c1",
                "toolName": "read_file",
                "content": [text("x" * 5000)],
                "compactSummary": "a.py: 120 lines",
            },
            turn="a1",
        ),
        msg(
            "t2",
            "tool",
            {"type": "tool_result", "toolUseId": "c2", "content": [text("y" * 900)]},
            turn="a1",
        ),
        msg("s1", "assistant", {"type": "summary", "text": "Earlier: setup."}),
    ]
    rendered = compaction.render_for_summary(messages)
    assert rendered.split("\n") == [
        "user: Read it",
        "user: [file a.py: file:///a.py]",
        "[assistant called read_file with {'path': 'a.py'}]",
        "[result of read_file]: a.py: 120 lines",
        "[result of tool]: " + "y" * compaction.TOOL_RESULT_CHARS + " …[cut]",
        "[earlier summary]: Earlier: setup.",
    ]


def test_render_keeps_the_start_and_the_end_of_a_long_transcript() -> None:
    messages = [msg(f"u{i}", "user", text(f"{i:05d} " + "z" * 994)) for i in range(40)]
    rendered = compaction.render_for_summary(messages)
    half = compaction.TRANSCRIPT_CHARS // 2
    assert len(rendered) == 2 * half + len("\n…[middle cut]…\n")
    assert rendered.startswith("user: 00000 ")
    assert rendered.endswith("z" * 10)
    assert "00039 " in rendered and "00020 " not in rendered


def test_the_summary_request_asks_for_a_handoff_without_tools() -> None:
    request = compaction.summary_request("user: hi", "keep the paths", 300)
    system, user = request.messages
    assert system.role == "system"
    assert (
        system.content
        == compaction.SUMMARY_PROMPT + "\nAlso follow these instructions: keep the paths"
    )
    assert user.content == "Conversation to summarise:\n\nuser: hi\n\nWrite the summary."
    assert (request.max_tokens, request.tool_choice, request.purpose) == (300, "none", "compaction")
    assert request.tools == []
    assert compaction.summary_budget(None) == compaction.SUMMARY_MAX_TOKENS
    assert compaction.summary_budget(50) == 128


async def test_compact_commits_one_summary_through_the_host() -> None:
    provider = scripted([{"text": "unused"}], summary=[{"text": "Goal: fix main.py."}])
    host = FakeHost(provider)
    long = "the details of a long answer " * 20
    for m in three_turns():
        m = {**m, "content": [text(m["content"][0]["text"] + " " + long)]}
        host.commit([UserMessage(m) if m["role"] == "user" else AssistantMessage(m)])
    host.commits.clear()

    result = await Compaction(host, None, 1, turn_id="a3").run()

    assert result.summary == "Goal: fix main.py."
    assert result.compacted and result.reason is None
    assert (result.messages_before, result.messages_after) == (6, 4)
    assert result.tokens_after < result.tokens_before
    [([summary], end)] = host.commits
    assert isinstance(summary, ContextSummary) and end is False
    assert summary.up_to_message_id == "a2"
    assert summary.keep_message_ids == ("u1",)
    [block] = summary.message["content"]
    assert block["type"] == "summary" and block["text"] == "Goal: fix main.py."
    assert ids(host.transcript.working()) == ["u1", summary.message["messageId"], "u3", "a3"]
    progress = host.updates_of("compaction_update")
    assert [(u["status"], u["compactionId"]) for u in progress] == [
        ("in_progress", block["compactionId"]),
        ("completed", block["compactionId"]),
    ]
    assert progress[1]["summary"] == [text("Goal: fix main.py.")]


async def test_compact_with_nothing_old_enough_changes_nothing() -> None:
    provider = scripted([{"text": "unused"}])
    host = FakeHost(provider)
    host.commit([UserMessage(msg("u1", "user", text("hi")))])
    host.commits.clear()
    result = await Compaction(host, None, 2, turn_id="a1").run()
    assert result.summary == ""
    assert not result.compacted
    assert result.reason == "nothing old enough to summarise"
    assert host.commits == [] and host.events == []
    assert provider.calls == 0
