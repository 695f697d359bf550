"""The Anthropic provider against a loopback server replaying the documented SSE format.

The real ``anthropic`` SDK talks to :class:`AnthropicReplay` over a socket. The last
test runs the whole product (sidecar, turn loop, SQLite store, compiler, provider)
through a thinking + tool round trip and a second turn after a restart, and asserts
that the thinking blocks sent back are exactly the ones received.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.providers import anthropic_replay as sse
from tests.providers.anthropic_replay import AnthropicReplay, Reply
from tests.providers.helpers import collect, errors, text_of
from tests.support import start_sidecar
from threadline.providers.anthropic_provider import AnthropicOptions, AnthropicProvider
from threadline.providers.base import (
    ChatMessage,
    ChatRequest,
    Done,
    ThoughtDelta,
    ToolCallDelta,
    ToolCallFinal,
    ToolSpec,
    Usage,
)
from threadline.providers.policies import PolicyProvider, PolicySettings
from threadline.userconfig import Secret

KEY = "sk-ant-test-0123456789SECRETKEY"
WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
# Thinking text with everything a careless round trip would alter: unicode, emoji,
# quotes, backslashes, tabs, blank lines and trailing spaces.
THINK_PARTS = ["The user wants Paris weather.\n\n", 'Ünïcode ✓ "quoted" \\ back\tslash 🌦', "  "]
THINKING = "".join(THINK_PARTS)
SIGNATURE_PARTS = ["EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+/", "Zm9vYmFy=="]
SIGNATURE = "".join(SIGNATURE_PARTS)
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFnB5fg0kQ0Wp1xGdCIwOj4Ej1Uv+Cx0P6Bo="
THINKING_2 = "It is 18 degrees; answer briefly."
SIGNATURE_2 = "Sig2+/AAAA=="


def first_reply() -> Reply:
    return Reply(
        sse.message_start(input_tokens=30, cache_read=100, cache_write=7)
        + sse.thinking(0, THINK_PARTS, SIGNATURE_PARTS)
        + sse.redacted(1, REDACTED)
        + sse.text(2, ["I'll check", " the weather."])
        + sse.tool_use(3, "toolu_01", "get_weather", ['{"ci', 'ty": "Pa', 'ris"}'])
        + sse.message_end("tool_use", 89)
    )


def second_reply() -> Reply:
    return Reply(
        sse.message_start(input_tokens=50, cache_read=137)
        + sse.thinking(0, [THINKING_2], [SIGNATURE_2])
        + sse.text(1, ["It is 18°C", " and sunny in Paris."])
        + sse.message_end("end_turn", 20)
    )


def provider(replay: AnthropicReplay, **options: Any) -> AnthropicProvider:
    return AnthropicProvider(
        AnthropicOptions(
            model="claude-replay",
            model_id="anthropic:claude-replay",
            base_url=replay.base_url,
            api_key=Secret(KEY),
            **options,
        )
    )


async def test_stream_events_from_the_documented_wire_format(replay: AnthropicReplay) -> None:
    replay.push(first_reply())
    p = provider(replay, thinking_budget=2048)
    events = await collect(p, ChatRequest([ChatMessage("user", "Weather?")], tools=[WEATHER]))
    thoughts = [e for e in events if isinstance(e, ThoughtDelta)]
    assert thoughts == [
        ThoughtDelta("", None, {"provider": "anthropic"}),
        *[ThoughtDelta(part) for part in THINK_PARTS],
        ThoughtDelta("", SIGNATURE),
        ThoughtDelta("", None, {"provider": "anthropic", "redacted": True, "data": REDACTED}),
    ]
    assert text_of(events) == "I'll check the weather."
    fragments = [e.arguments_fragment for e in events if isinstance(e, ToolCallDelta)]
    assert "".join(fragments) == '{"city": "Paris"}'
    [call] = [e for e in events if isinstance(e, ToolCallFinal)]
    assert call == ToolCallFinal("toolu_01", "get_weather", {"city": "Paris"}, '{"city": "Paris"}')
    assert Usage(30 + 100 + 7, 89, 100, 7) in events
    assert events[-1] == Done("tool_calls")
    [req] = replay.message_requests()
    body = req.body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] > 2048 and body["stream"] is True
    assert body["tools"][0]["input_schema"] == WEATHER.parameters
    assert body["tool_choice"] == {"type": "auto"}
    # The SDK authenticates with x-api-key or a bearer token depending on its version.
    auth = req.headers.get("x-api-key", "") + req.headers.get("authorization", "")
    assert KEY in auth
    await p.aclose()


def assistant_turn() -> list[ChatMessage]:
    """What the compiler hands back after the first reply was stored."""
    return [
        ChatMessage("system", "Be brief."),
        ChatMessage("user", "Weather in Paris?"),
        ChatMessage(
            "assistant",
            "I'll check the weather.",
            tool_calls=[ToolCallFinal("toolu_01", "get_weather", {"city": "Paris"})],
            thoughts=[
                {"text": THINKING, "signature": SIGNATURE, "provider": "anthropic"},
                {"text": "", "provider": "anthropic", "redacted": True, "data": REDACTED},
                {"text": "a local model's thought", "signature": None},
            ],
        ),
        ChatMessage("tool", "18°C and sunny", tool_call_id="toolu_01", tool_name="get_weather"),
    ]


def expected_thinking_blocks() -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": THINKING, "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": REDACTED},
    ]


async def test_thinking_blocks_go_back_exactly(replay: AnthropicReplay) -> None:
    replay.push(second_reply())
    p = provider(replay, thinking_budget=2048)
    events = await collect(p, ChatRequest(assistant_turn(), tools=[WEATHER]))
    assert text_of(events) == "It is 18°C and sunny in Paris."
    [req] = replay.message_requests()
    body = req.body
    assert body["system"][0]["text"] == "Be brief."
    user, assistant, result = body["messages"]
    assert user == {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}
    # Thinking first, byte for byte; the foreign (unsigned) thought is not sent.
    assert assistant["content"] == [
        *expected_thinking_blocks(),
        {"type": "text", "text": "I'll check the weather."},
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    assert result["role"] == "user"
    assert result["content"][0]["type"] == "tool_result"
    assert result["content"][0]["tool_use_id"] == "toolu_01"
    assert result["content"][0]["content"] == "18°C and sunny"
    # Prompt caching marks the system prompt and the end of the conversation.
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert result["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # The raw bytes carry the signature and redacted data verbatim.
    assert SIGNATURE.encode() in req.raw and REDACTED.encode() in req.raw
    await p.aclose()


async def test_cut_stream_is_interrupted_and_keeps_text(replay: AnthropicReplay) -> None:
    events_1 = sse.message_start() + sse.text(0, ["Partial", " answer", " never", " ends"])
    replay.push(Reply(events_1 + sse.message_end(), cut_after=4))
    p = PolicyProvider(provider(replay), PolicySettings(retries=3, retry_base=0.01))
    events = await collect(p, ChatRequest([ChatMessage("user", "Hi")]))
    assert text_of(events) == "Partial answer"
    [err] = errors(events)
    assert err.reason == "stream_interrupted" and err.retryable
    assert len(replay.message_requests()) == 1
    await p.aclose()


async def test_overloaded_is_retried_and_auth_is_not(replay: AnthropicReplay) -> None:
    overloaded = {"type": "overloaded_error", "message": "Overloaded"}
    replay.push(Reply(status=529, error=overloaded), second_reply())
    p = PolicyProvider(provider(replay), PolicySettings(retries=2, retry_base=0.01))
    events = await collect(p, ChatRequest([ChatMessage("user", "Hi")]))
    assert text_of(events) == "It is 18°C and sunny in Paris."
    replay.push(Reply(status=401, error={"type": "authentication_error", "message": KEY}))
    [err] = errors(await collect(p, ChatRequest([ChatMessage("user", "Hi")])))
    assert err.reason == "auth_error" and not err.retryable and KEY not in err.message
    await p.aclose()


async def test_error_event_mid_stream(replay: AnthropicReplay) -> None:
    overloaded = (
        "error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    replay.push(
        Reply([*sse.message_start(), overloaded]),
        second_reply(),
        Reply([*sse.message_start(), *sse.text(0, ["Half"])[:2], overloaded]),
    )
    p = PolicyProvider(provider(replay), PolicySettings(retries=2, retry_base=0.01))
    events = await collect(p, ChatRequest([ChatMessage("user", "Hi")]))
    assert text_of(events) == "It is 18°C and sunny in Paris." and not errors(events)
    events = await collect(p, ChatRequest([ChatMessage("user", "Hi")]))
    assert text_of(events) == "Half"
    [err] = errors(events)
    assert err.reason == "stream_interrupted" and err.retryable
    assert len(replay.message_requests()) == 3
    await p.aclose()


async def test_missing_key_is_a_clear_error(replay: AnthropicReplay) -> None:
    p = AnthropicProvider(AnthropicOptions(model="m", model_id="anthropic:m", api_key=None))
    [err] = errors(await collect(p, ChatRequest([ChatMessage("user", "Hi")])))
    assert err.reason == "auth_error" and "ANTHROPIC_API_KEY" in err.message
    assert replay.requests == []


# -- the whole product -------------------------------------------------------------------


def _assistant_blocks(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [m["content"] for m in body["messages"] if m["role"] == "assistant"]


@pytest.mark.timeout(120)
async def test_sidecar_thinking_tool_round_trip_sends_thinking_back_exactly(
    replay: AnthropicReplay,
    isolated_config: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    isolated_config.write_text(
        f'[providers.anthropic]\nbase_url = "{replay.base_url}"\n\n'
        '[models.claude]\nprovider = "anthropic"\nmodel = "claude-replay"\n'
        "thinking_budget = 2048\n"
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    replay.push(first_reply(), second_reply())
    tool = {"name": "get_weather", "description": "weather", "inputSchema": WEATHER.parameters}

    client = await start_sidecar(home)
    try:
        calls: list[dict[str, Any]] = []

        async def on_tool(params: dict[str, Any]) -> dict[str, Any]:
            calls.append(params)
            return {"content": [{"type": "text", "text": "18°C and sunny"}]}

        client.on_request("tool/call", on_tool)
        sid = await client.new_session(model="claude", tools=[tool])
        result = await client.prompt(sid, "Weather in Paris?")
        assert result["stopReason"] == "end_turn"
        assert calls[0]["arguments"] == {"city": "Paris"}
        assert result["usage"]["cachedReadTokens"] == 237
        assert result["usage"]["cachedWriteTokens"] == 7
        thought_text = "".join(
            u["update"]["content"]["text"]
            for u in client.updates
            if u["update"]["sessionUpdate"] == "agent_thought_chunk"
        )
        assert thought_text == THINKING + THINKING_2
    finally:
        await client.stop()
    first, second = replay.message_requests()
    assert _assistant_blocks(first.body) == []
    [round_one] = _assistant_blocks(second.body)
    assert round_one[:2] == expected_thinking_blocks()
    assert [b["type"] for b in round_one[2:]] == ["text", "tool_use"]

    # A new process: the blocks come back from the SQLite store, still exact.
    replay.push(Reply(sse.message_start() + sse.text(0, ["You're welcome."]) + sse.message_end()))
    client = await start_sidecar(home)
    try:
        await client.call("session/load", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
        client.on_request("tool/call", on_tool)
        result = await client.prompt(sid, "Thanks!")
        assert result["stopReason"] == "end_turn"
    finally:
        await client.stop()
    third = replay.message_requests()[2]
    turn_one, turn_one_answer = _assistant_blocks(third.body)
    assert turn_one[:2] == expected_thinking_blocks()
    assert turn_one_answer[0] == {
        "type": "thinking",
        "thinking": THINKING_2,
        "signature": SIGNATURE_2,
    }
    assert json.dumps(third.body).count(SIGNATURE) == 1
    for path in home.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"the API key leaked into {path}"


async def test_reachable_lists_models_without_spending_tokens(replay: AnthropicReplay) -> None:
    p = provider(replay)
    assert await p.reachable() == (True, "model listed")
    assert [r.path.split("?")[0] for r in replay.requests] == ["/v1/models"]
    await p.aclose()
