"""The turn loop in-process, against a fake host and a scripted model."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.fakes import EchoTool, FakeHost, scripted, started, text_prompt, turn, when
from threadline.engine import events
from threadline.engine.errors import ToolLoopFailed
from threadline.engine.events import Event
from threadline.engine.mutations import (
    AssistantMessage,
    AssistantTruncated,
    ToolResult,
    UserMessage,
)
from threadline.userconfig import Price

pytestmark = pytest.mark.timeout(30)


async def test_a_plain_answer_is_streamed_journaled_and_committed() -> None:
    provider = scripted([{"text": "Hello"}, {"text": ", world"}])
    host = FakeHost(provider)
    t = turn(host, "say hello")
    result = await t.run()

    assert result.stop_reason == "end_turn"
    assert host.kinds() == ["user_message", "assistant_message"]
    user, answer = host.committed
    assert isinstance(user, UserMessage) and isinstance(answer, AssistantMessage)
    assert user.message["content"] == text_prompt("say hello")
    assert user.message["turnId"] == "u1"
    assert answer.message["turnId"] == "a1"
    assert answer.message["content"] == [{"type": "text", "text": "Hello, world"}]
    assert answer.message["stopReason"] == "end_turn"
    assert answer.message["model"] == "scripted:test"
    # The answer ends the journal; the user message does not.
    assert [end for _, end in host.commits] == [False, True]
    # Journaled before announced, under the id the answer is stored with.
    [(message_id, meta)] = host.journal.began
    assert message_id == answer.message["messageId"] == result.message_id
    assert meta == {"turnId": "a1", "model": provider.model_id}
    assert "".join(text for _, text in host.journal.runs) == "Hello, world"
    chunks = host.updates_of("agent_message_chunk")
    assert "".join(c["content"]["text"] for c in chunks) == "Hello, world"
    assert {c["messageId"] for c in chunks} == {message_id}
    assert host.titled == [text_prompt("say hello")]
    # Usage as the scripted model reported it: the request's size, two deltas.
    usage = result.usage
    assert usage.output_tokens == 2
    assert usage.input_tokens > 0
    assert usage.total_tokens == usage.input_tokens + 2
    [shown] = host.updates_of("usage_update")
    assert shown == {
        "sessionUpdate": "usage_update",
        "used": usage.input_tokens + 2,
        "size": provider.context_window,
    }
    assert result.user_message_id == user.message["messageId"]


async def test_a_tool_round_commits_the_call_its_result_and_the_answer() -> None:
    echo = EchoTool()
    provider = scripted(
        [{"tool_call": {"name": "echo", "arguments": {"text": "ping"}, "id": "model_id"}}],
        [{"text": "It said ping."}],
    )
    host = FakeHost(provider, tools=[echo])
    result = await turn(host, "echo ping").run()

    assert result.stop_reason == "end_turn"
    assert host.kinds() == ["user_message", "assistant_message", "tool_result", "assistant_message"]
    call_msg, result_msg, final = host.committed[1:]
    [use] = call_msg.message["content"]
    # The engine mints its own call ids, whatever the provider said.
    assert use["id"].startswith("call_") and use["id"] != "model_id"
    assert use == {
        "type": "tool_use",
        "id": use["id"],
        "name": "echo",
        "input": {"text": "ping"},
        "title": "Echo ping",
        "kind": "other",
        "locations": [{"path": "/nowhere/echo.txt"}],
    }
    assert call_msg.message["stopReason"] == "end_turn"
    assert isinstance(result_msg, ToolResult)
    [block] = result_msg.message["content"]
    assert block["toolUseId"] == use["id"]
    assert block["status"] == "completed"
    assert block["isError"] is False
    assert block["content"] == [{"type": "text", "text": "echo: ping"}]
    assert final.message["content"] == [{"type": "text", "text": "It said ping."}]
    # The tool ran once, with its own call's context.
    [(arguments, ctx)] = echo.runs
    assert arguments == {"text": "ping"}
    assert (ctx.session_id, ctx.tool_call_id) == ("sess_fake", use["id"])
    # Announced as typed events (the text and usage around them left out)...
    assert [
        type(e) for e in host.events if not isinstance(e, (events.MessageChunk, events.Usage))
    ] == [events.PromptStored, events.ToolCallStarted, events.ToolProgress, events.ToolFinished]
    # ...which a client is shown as: pending call, in progress, completed with the result.
    calls = [u for u in host.updates if u["sessionUpdate"].startswith("tool_call")]
    assert [(u["sessionUpdate"], u["status"]) for u in calls] == [
        ("tool_call", "pending"),
        ("tool_call_update", "in_progress"),
        ("tool_call_update", "completed"),
    ]
    assert calls[2]["content"] == [
        {"type": "content", "content": {"type": "text", "text": "echo: ping"}}
    ]
    # No permission was needed, none asked.
    assert host.asked == []


async def test_steering_joins_after_the_tool_batch_and_before_the_next_model_call() -> None:
    class SteerWhileRunning(EchoTool):
        """Sends a steering prompt while it runs, as a second window would."""

        async def run(self, arguments: dict[str, Any], ctx: Any) -> Any:
            host.steering.append(("msg_steer", text_prompt("Say pong instead.")))
            return await super().run(arguments, ctx)

    provider = scripted(
        [{"tool_call": {"name": "echo", "arguments": {"text": "ping"}}}],
        [{"text": "pong"}],
        steered=True,
    )
    host = FakeHost(provider, tools=[SteerWhileRunning()])
    task = turn(host, "echo ping")
    result = await task.run()

    assert result.stop_reason == "end_turn"
    assert host.kinds() == [
        "user_message",
        "assistant_message",
        "tool_result",
        "user_message",
        "assistant_message",
    ]
    steer = host.committed[3].message
    assert steer["messageId"] == "msg_steer" and steer["turnId"] == "u1"
    assert "pong" not in str(host.committed[2].message), "never inside the tool result"
    assert task.joined == ["msg_steer"]
    assert host.shown_prompts == [steer]
    assert host.committed[-1].message["content"] == [{"type": "text", "text": "pong"}]


async def test_steering_that_comes_as_the_answer_ends_gets_one_more_model_call() -> None:
    class LateSteer(FakeHost):
        """The steering prompt arrives while the first answer streams."""

        def take_steering(self, turn_id: str) -> list[tuple[str, list[dict[str, Any]]]]:
            self.looks += 1
            return [("msg_late", text_prompt("and then?"))] if self.looks == 2 else []

    provider = scripted([{"echo": True}])
    host = LateSteer(provider)
    task = turn(host, "first")
    result = await task.run()
    assert result.stop_reason == "end_turn"
    assert host.kinds() == [
        "user_message",
        "assistant_message",
        "user_message",
        "assistant_message",
    ]
    assert task.joined == ["msg_late"]
    assert provider.calls == 2
    assert host.committed[-1].message["content"] == [{"type": "text", "text": "and then? "}]


async def test_an_interrupt_mid_stream_keeps_the_partial_answer_and_answers_cancelled() -> None:
    provider = scripted([{"text": "partial "}, {"text": "answer"}, {"hang": True}])
    host = FakeHost(provider)

    def all_shown(_: Event) -> bool:
        chunks = host.updates_of("agent_message_chunk")
        return "".join(c["content"]["text"] for c in chunks) == "partial answer"

    t, results = await started(turn(host, "tell me"), when(host, all_shown))

    [result] = results
    assert result.stop_reason == "cancelled"
    assert host.kinds() == ["user_message", "assistant_truncated"]
    truncated = host.committed[-1]
    assert isinstance(truncated, AssistantTruncated)
    assert truncated.message["content"] == [{"type": "text", "text": "partial answer"}]
    assert truncated.message["truncated"] is True
    assert truncated.message["error"] == "cancelled by the user"
    assert truncated.message["messageId"] == host.journal.began[0][0]
    assert host.commits[-1][1] is True  # ends the journal
    # The model never reported usage: it is estimated, one token a delta.
    assert result.usage.output_tokens == 2
    assert t.done.is_set()
    assert host.transcript.messages[-1]["truncated"] is True


async def test_a_refused_permission_fails_the_call_without_running_it() -> None:
    echo = EchoTool(needs_permission=True)
    provider = scripted(
        [{"tool_call": {"name": "echo", "arguments": {"text": "rm -rf"}}}],
        [{"text": "I will not."}],
    )
    host = FakeHost(provider, tools=[echo], allow=False)
    result = await turn(host, "go").run()

    assert result.stop_reason == "end_turn"
    assert echo.runs == []
    call_id = host.committed[1].message["content"][0]["id"]
    assert host.asked == [("echo", call_id)]
    [block] = host.committed[2].message["content"]
    assert block["status"] == "failed"
    assert block["isError"] is True
    assert "refused permission" in block["content"][0]["text"]
    final = host.updates_of("tool_call_update")
    # Refused calls never go in progress: straight to failed.
    assert [(u["toolCallId"], u["status"]) for u in final] == [(call_id, "failed")]
    assert host.committed[-1].message["content"] == [{"type": "text", "text": "I will not."}]


async def test_an_unknown_tool_is_answered_and_fails_the_turn() -> None:
    provider = scripted([{"text": "Let me "}, {"tool_call": {"name": "nope", "arguments": {}}}])
    host = FakeHost(provider, tools=[EchoTool()])
    with pytest.raises(ToolLoopFailed) as caught:
        await turn(host).run()
    assert caught.value.data["reason"] == "tool_parse_error"
    assert caught.value.data["partialText"] == "Let me "
    # Every call still has exactly one result.
    assert host.kinds() == ["user_message", "assistant_message", "tool_result"]
    assert host.transcript.open_calls == {}
    assert host.committed[-1].message["content"][0]["content"][0]["text"] == "unknown tool 'nope'"


def tokens(inputs: int, outputs: int) -> dict[str, Any]:
    return {"usage": {"input_tokens": inputs, "output_tokens": outputs}}


async def test_each_model_calls_usage_carries_the_sessions_cost_when_priced() -> None:
    """The Usage event after each call: the stored answers' cost plus the call just
    made (its answer is not stored yet), at the model's price; none unpriced."""
    rounds = [
        [
            {"tool_call": {"name": "echo", "arguments": {"text": "x"}}},
            {"usage": {"input_tokens": 1000, "output_tokens": 200}},
        ],
        [{"text": "done"}, {"usage": {"input_tokens": 3000, "output_tokens": 500}}],
    ]
    for prices, expected in (
        ({"scripted:test": Price(2.0, 10.0)}, [0.004, 0.015]),
        ({}, [None, None]),
    ):
        host = FakeHost(scripted(*rounds), tools=[EchoTool()], prices=prices)
        await turn(host, "go").run()
        costs = [e.cost for e in host.events if isinstance(e, events.Usage)]
        assert costs == pytest.approx(expected) if prices else costs == expected
