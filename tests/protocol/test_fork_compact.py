"""Fork (copy-on-write, exact prefixes) and compaction (one checkpoint mutation)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support import SidecarClient, scripted

ANSWER = scripted(
    [{"text": "answer"}],
)
SUMMARIZING = "scripted:" + json.dumps(
    {"rounds": [[{"text": "answer"}]], "summary": [{"text": "Goal: test. Next step: more."}]}
)
FAILING_SUMMARY = "scripted:" + json.dumps(
    {"rounds": [[{"text": "answer"}]], "summary": [{"error": {"message": "no summary today"}}]}
)


async def history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


async def session_with_turns(
    client: SidecarClient, n: int, model: str = ANSWER, words: int = 1
) -> str:
    sid = await client.new_session(model=model)
    for i in range(n):
        await client.prompt(sid, f"question {i} " + "detail " * words)
    return sid


async def test_fork_at_every_message_equals_the_prefix(sidecar: SidecarClient) -> None:
    sid = await session_with_turns(sidecar, 3)
    parent = await history(sidecar, sid)
    for i, message in enumerate(parent):
        fork = await sidecar.call(
            "session/fork", {"sessionId": sid, "messageId": message["messageId"]}
        )
        assert fork["parentSessionId"] == sid
        assert fork["forkedAtMessageId"] == message["messageId"]
        assert await history(sidecar, fork["sessionId"]) == parent[: i + 1]
    whole = await sidecar.call("session/fork", {"sessionId": sid})
    assert await history(sidecar, whole["sessionId"]) == parent
    assert whole["forkedAtMessageId"] == parent[-1]["messageId"]


async def test_a_fork_is_titled_apart_from_its_parent(sidecar: SidecarClient) -> None:
    sid = await session_with_turns(sidecar, 1)
    child = (await sidecar.call("session/fork", {"sessionId": sid}))["sessionId"]
    grandchild = (await sidecar.call("session/fork", {"sessionId": child}))["sessionId"]
    await sidecar.prompt(child, "a prompt in the fork does not retitle it")
    titles = {
        s["sessionId"]: s.get("title") for s in (await sidecar.call("session/list", {}))["sessions"]
    }
    assert titles[sid] == "question 0 detail"
    assert titles[child] == "question 0 detail · fork"
    assert titles[grandchild] == "question 0 detail · fork 2"  # numbered, not piled up
    untitled = await sidecar.new_session(model=ANSWER)
    fork = (await sidecar.call("session/fork", {"sessionId": untitled}))["sessionId"]
    titles = {
        s["sessionId"]: s.get("title") for s in (await sidecar.call("session/list", {}))["sessions"]
    }
    assert titles[fork] == f"session {untitled} · fork"


async def test_parent_and_child_are_isolated_both_ways(sidecar: SidecarClient) -> None:
    sid = await session_with_turns(sidecar, 1)
    child = (await sidecar.call("session/fork", {"sessionId": sid}))["sessionId"]
    before_parent = await history(sidecar, sid)
    await sidecar.prompt(child, "child only")
    assert await history(sidecar, sid) == before_parent
    before_child = await history(sidecar, child)
    await sidecar.prompt(sid, "parent only")
    assert await history(sidecar, child) == before_child
    assert [m["turnId"] for m in before_child] == ["u1", "a1", "u2", "a2"]
    listed = {s["sessionId"]: s for s in (await sidecar.call("session/list", {}))["sessions"]}
    assert listed[child]["_meta"]["parentSessionId"] == sid
    assert listed[child]["_meta"]["messageCount"] == 4


async def test_forks_of_forks_and_deleting_a_parent(sidecar: SidecarClient) -> None:
    sid = await session_with_turns(sidecar, 2)
    first = await history(sidecar, sid)
    child = (
        await sidecar.call("session/fork", {"sessionId": sid, "messageId": first[1]["messageId"]})
    )["sessionId"]
    await sidecar.prompt(child, "in child")
    child_hist = await history(sidecar, child)
    grandchild = (
        await sidecar.call(
            "session/fork", {"sessionId": child, "messageId": child_hist[2]["messageId"]}
        )
    )["sessionId"]
    assert await history(sidecar, grandchild) == child_hist[:3]
    await sidecar.call("session/delete", {"sessionId": sid})
    await sidecar.call("session/delete", {"sessionId": child})
    assert await history(sidecar, grandchild) == child_hist[:3]
    assert (await sidecar.prompt(grandchild, "still works"))["stopReason"] == "end_turn"


async def test_fork_at_a_turn_label_as_history_prints_it(sidecar: SidecarClient) -> None:
    """``a1`` (``threadline history``'s label) forks after the last message of that
    turn; ``u2`` after that prompt; an unknown label is refused like an unknown id."""
    sid = await session_with_turns(sidecar, 2)
    parent = await history(sidecar, sid)
    assert [m["turnId"] for m in parent] == ["u1", "a1", "u2", "a2"]
    for label, upto in (("a1", 2), ("u2", 3)):
        fork = await sidecar.call("session/fork", {"sessionId": sid, "messageId": label})
        assert fork["forkedAtMessageId"] == parent[upto - 1]["messageId"]
        assert await history(sidecar, fork["sessionId"]) == parent[:upto]
    with pytest.raises(JsonRpcException) as err:
        await sidecar.call("session/fork", {"sessionId": sid, "messageId": "a9"})
    assert err.value.code == -32602


async def test_fork_at_a_message_not_in_the_session(sidecar: SidecarClient) -> None:
    a = await session_with_turns(sidecar, 1)
    b = await session_with_turns(sidecar, 1)
    foreign = (await history(sidecar, b))[0]["messageId"]
    with pytest.raises(JsonRpcException) as err:
        await sidecar.call("session/fork", {"sessionId": a, "messageId": foreign})
    assert err.value.code == -32602
    with pytest.raises(JsonRpcException) as err:
        await sidecar.call("session/fork", {"sessionId": "sess_nope"})
    assert err.value.code == -32002


async def test_fork_while_a_turn_runs_snapshots_it_and_the_parent_finishes(
    sidecar: SidecarClient,
) -> None:
    slow = scripted([{"text": "first half, "}, {"sleep": 0.6}, {"text": "second half"}])
    sid = await sidecar.new_session(model=slow)
    prompt = asyncio.ensure_future(sidecar.prompt(sid, "go"))
    await sidecar.wait_update(lambda u: "first half" in str(u["update"].get("content")))
    fork = await sidecar.call("session/fork", {"sessionId": sid})
    child = await history(sidecar, fork["sessionId"])
    assert [m["role"] for m in child] == ["user", "assistant"]
    assert child[1]["truncated"] is True
    assert child[1]["content"] == [{"type": "text", "text": "first half, "}]
    assert (await prompt)["stopReason"] == "end_turn"
    parent = await history(sidecar, sid)
    assert parent[1]["content"] == [{"type": "text", "text": "first half, second half"}]
    assert "truncated" not in parent[1] or parent[1]["truncated"] is False
    assert child[1]["messageId"] != parent[1]["messageId"]


async def test_fork_inside_a_tool_round_answers_the_open_call(sidecar: SidecarClient) -> None:
    model = scripted(
        [{"tool_call": {"name": "lookup", "arguments": {"q": 1}, "id": "call_1"}}],
        [{"text": "done"}],
    )

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "found"}]}

    sidecar.on_request("tool/call", answer)
    sid = await sidecar.new_session(
        model=model, tools=[{"name": "lookup", "inputSchema": {"type": "object"}}]
    )
    await sidecar.prompt(sid, "look it up")
    parent = await history(sidecar, sid)
    assert [m["role"] for m in parent] == ["user", "assistant", "tool", "assistant"]
    fork = await sidecar.call(
        "session/fork", {"sessionId": sid, "messageId": parent[1]["messageId"]}
    )
    child = await history(sidecar, fork["sessionId"])
    assert child[:2] == parent[:2]
    call_id = parent[1]["content"][0]["id"]
    assert child[2]["content"][0]["toolUseId"] == call_id
    assert child[2]["content"][0]["status"] == "cancelled"


async def test_compact_keeps_task_and_recent_turns(sidecar: SidecarClient) -> None:
    sid = await session_with_turns(sidecar, 4, model=SUMMARIZING, words=200)
    before = await history(sidecar, sid)
    result = await sidecar.call("session/compact", {"sessionId": sid})
    assert result["summary"] == "Goal: test. Next step: more."
    assert result["messagesBefore"] == 8 and result["messagesAfter"] == 6
    assert result["tokensAfter"] < result["tokensBefore"]
    after = await history(sidecar, sid)
    assert after[: len(before)] != before  # marks were added
    assert [m["messageId"] for m in after[: len(before)]] == [m["messageId"] for m in before]
    compacted = [m["messageId"] for m in after if m.get("compacted")]
    # u1 (the task) stays; a1, u2, a2 are summarised; the last two turns stay
    assert compacted == [before[1]["messageId"], before[2]["messageId"], before[3]["messageId"]]
    [summary] = after[-1]["content"]
    assert summary["type"] == "summary" and summary["text"] == result["summary"]
    statuses = [
        u["update"]["status"]
        for u in sidecar.updates
        if u["update"]["sessionUpdate"] == "compaction_update"
    ]
    assert statuses == ["in_progress", "completed"]
    assert (await sidecar.prompt(sid, "next"))["stopReason"] == "end_turn"


async def test_failed_compaction_changes_nothing(sidecar: SidecarClient) -> None:
    sid = await session_with_turns(sidecar, 4, model=FAILING_SUMMARY)
    before = json.dumps(await history(sidecar, sid))
    with pytest.raises(JsonRpcException) as err:
        await sidecar.call("session/compact", {"sessionId": sid})
    assert err.value.code == -32011
    assert json.dumps(await history(sidecar, sid)) == before
    statuses = [
        u["update"]["status"]
        for u in sidecar.updates
        if u["update"]["sessionUpdate"] == "compaction_update"
    ]
    assert statuses == ["in_progress", "failed"]


async def test_compacting_a_busy_session_is_refused(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(model=scripted([{"text": "x"}, {"hang": True}]))
    prompt = asyncio.ensure_future(sidecar.prompt(sid, "go"))
    await sidecar.wait_update(lambda u: u["update"]["sessionUpdate"] == "agent_message_chunk")
    with pytest.raises(JsonRpcException) as err:
        await sidecar.call("session/compact", {"sessionId": sid})
    assert err.value.code == -32010
    await sidecar.call("session/interrupt", {"sessionId": sid})
    await prompt


async def test_auto_compaction_at_a_tiny_threshold(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(model=SUMMARIZING, autoCompact=0.02)
    for i in range(4):
        prompt = f"q{i} " + "context " * 60
        assert (await sidecar.prompt(sid, prompt))["stopReason"] == "end_turn"
    summaries = [m for m in await history(sidecar, sid) if m["content"][0]["type"] == "summary"]
    assert summaries, "a compaction ran inside a turn"
    off = await sidecar.new_session(model=SUMMARIZING, autoCompact=False)
    for i in range(4):
        await sidecar.prompt(off, f"q{i}")
    assert not [m for m in await history(sidecar, off) if m["content"][0]["type"] == "summary"]


async def test_context_too_large_is_32013(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(model=ANSWER, autoCompact=False)
    with pytest.raises(JsonRpcException) as err:
        await sidecar.prompt(sid, "word " * 40_000)
    assert err.value.code == -32013


async def test_slash_commands(sidecar: SidecarClient) -> None:
    sid = await session_with_turns(sidecar, 4, model=SUMMARIZING, words=60)
    commands = next(
        u["update"]["availableCommands"]
        for u in sidecar.updates
        if u["sessionId"] == sid and u["update"]["sessionUpdate"] == "available_commands_update"
    )
    assert {c["name"] for c in commands} == {"compact", "fork"}
    result = await sidecar.prompt(sid, "/compact keep the numbers")
    assert result["stopReason"] == "end_turn"
    assert any(m["content"][0]["type"] == "summary" for m in await history(sidecar, sid))
    await sidecar.prompt(sid, "/fork")
    assert "Forked into session" in sidecar.text_of(sid)
    assert len((await sidecar.call("session/list", {}))["sessions"]) == 2


async def test_a_summary_longer_than_the_history_is_not_committed(sidecar: SidecarClient) -> None:
    wordy = "scripted:" + json.dumps(
        {"rounds": [[{"text": "ok"}]], "summary": [{"text": "A very long summary. " * 200}]}
    )
    sid = await session_with_turns(sidecar, 4, model=wordy)
    before = json.dumps(await history(sidecar, sid))
    result = await sidecar.call("session/compact", {"sessionId": sid})
    assert result["summary"] == "" and result["tokensAfter"] == result["tokensBefore"]
    assert json.dumps(await history(sidecar, sid)) == before


async def test_replay_shows_the_summary_as_a_compaction_and_marks_compacted_messages(
    sidecar: SidecarClient,
) -> None:
    """A resumed session shows what the live one showed: the summary as the
    compaction's completed update, the messages it replaced as compacted."""
    sid = await session_with_turns(sidecar, 4, model=SUMMARIZING, words=200)
    await sidecar.call("session/compact", {"sessionId": sid})
    messages = await history(sidecar, sid)
    summary_id = messages[-1]["messageId"]
    compacted_ids = {m["messageId"] for m in messages if m.get("compacted")}
    before = len(sidecar.updates)
    await sidecar.call("session/load", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
    replay = [u["update"] for u in sidecar.updates[before:] if u["sessionId"] == sid]
    texts = [u for u in replay if u["sessionUpdate"].endswith("_message_chunk")]
    marks = {u["messageId"]: u["_meta"]["threadline"] for u in texts}
    assert summary_id not in marks, "the summary is not replayed as an answer"
    [done] = [u for u in replay if u["sessionUpdate"] == "compaction_update"]
    assert done["status"] == "completed" and done["summary"]
    assert {m for m, t in marks.items() if t.get("compacted")} == compacted_ids


async def test_prompt_result_names_the_user_message_it_stored(sidecar: SidecarClient) -> None:
    """So a client can offer "fork from here" on a message the user just typed."""
    sid = await sidecar.new_session(model=SUMMARIZING)
    result = await sidecar.prompt(sid, "hello")
    messages = await history(sidecar, sid)
    assert result["_meta"]["threadline"]["userMessageId"] == messages[0]["messageId"]
    fork = await sidecar.call(
        "session/fork",
        {"sessionId": sid, "messageId": result["_meta"]["threadline"]["userMessageId"]},
    )
    assert len(await history(sidecar, fork["sessionId"])) == 1
