"""Pure pieces: retry-after parsing, backoff, policy settings, message shapes, assembly."""

from __future__ import annotations

import email.utils
import random
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from threadline.providers.base import (
    ChatMessage,
    ChatRequest,
    Done,
    ProviderError,
    TextDelta,
    ThoughtDelta,
    ToolCallFinal,
    Usage,
    rough_token_count,
)
from threadline.providers.openai_compat import (
    OpenAICompatProvider,
    OpenAIOptions,
    StreamAssembler,
    to_openai_messages,
)
from threadline.providers.openai_tokens import offline_encoding as _offline_encoding
from threadline.providers.policies import PolicyProvider, PolicySettings, RateLimiter
from threadline.providers.policies.failures import parse_retry_after, scrub


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= (parse_retry_after({"retry-after": date}) or 0) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_policy_settings_validation() -> None:
    s = PolicySettings.from_mapping({"retries": 2, "idle_timeout": 0, "tokens_per_period": 500})
    assert (s.retries, s.idle_timeout, s.tokens_per_period) == (2, None, 500)
    with pytest.raises(ValueError, match="unknown policy keys: retry"):
        PolicySettings.from_mapping({"retry": 2})
    with pytest.raises(ValueError, match="must be a number"):
        PolicySettings.from_mapping({"retries": "2"})
    with pytest.raises(ValueError, match="must not be negative"):
        PolicySettings.from_mapping({"retry_base": -1})


def test_backoff_is_exponential_capped_and_jittered() -> None:
    settings = PolicySettings(retry_base=1.0, retry_max=5.0, jitter=0.5)
    p = PolicyProvider(None, settings, rng=random.Random(7))  # type: ignore[arg-type]
    for attempt, full in enumerate([1.0, 2.0, 4.0, 5.0, 5.0]):
        delays = [p.backoff(attempt, None) for _ in range(50)]
        assert all(full * 0.5 <= d <= full for d in delays)
        assert len(set(delays)) > 1  # jitter spreads clients apart
    assert 2.0 <= p.backoff(0, 2.0) <= 2.2  # Retry-After wins over the schedule


def test_rate_limiter_window() -> None:
    now = [0.0]
    limiter = RateLimiter(2, 100, 10.0, clock=lambda: now[0])
    assert limiter.reserve(30)[0] == 0
    assert limiter.reserve(30)[0] == 0
    wait, res = limiter.reserve(1)
    assert res is None and wait == 10.0  # two requests already in this window
    now[0] = 10.0
    wait, res = limiter.reserve(90)
    assert wait == 0 and res is not None
    RateLimiter.settle(res, 60)
    now[0] = 11.0
    wait, res = limiter.reserve(50)
    assert res is None and wait == pytest.approx(9.0)  # 60 + 50 > 100 until it expires


def test_scrub_masks_keys() -> None:
    assert scrub("bad key sk-abcdefghijklmnop1234", ()) == "bad key sk-abcd***"
    assert scrub("token=hunter2-long", ["hunter2-long"]) == "token=***"


def test_openai_message_shapes() -> None:
    call = ToolCallFinal("c1", "get_weather", {"city": "Paris"}, '{"city": "Paris"}')
    messages = [
        ChatMessage("system", "S"),
        ChatMessage("user", "U"),
        ChatMessage("assistant", "", tool_calls=[call], thoughts=[{"text": "hmm"}]),
        ChatMessage("tool", "boom", tool_call_id="c1", tool_name="get_weather", is_error=True),
    ]
    native = to_openai_messages(messages)
    assert native[2] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    assert native[3] == {"role": "tool", "tool_call_id": "c1", "content": "Error: boom"}
    user = to_openai_messages(messages, tool_results="user", send_reasoning=True)
    assert user[3] == {"role": "user", "content": "Result of get_weather (call c1):\nError: boom"}
    assert user[2]["reasoning_content"] == "hmm"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, usage: Any = None) -> Any:
    choices = []
    if delta is not None or finish is not None:
        d = SimpleNamespace(content=None, refusal=None, tool_calls=None, model_extra={})
        for k, v in (delta or {}).items():
            if k in ("reasoning_content",):
                d.model_extra[k] = v
            elif k == "tool_calls":
                d.tool_calls = [
                    SimpleNamespace(
                        index=t["index"],
                        id=t.get("id"),
                        function=SimpleNamespace(name=t.get("name"), arguments=t.get("args")),
                    )
                    for t in v
                ]
            else:
                setattr(d, k, v)
        choices = [SimpleNamespace(index=0, delta=d, finish_reason=finish)]
    return SimpleNamespace(choices=choices, usage=usage)


def test_assembler_builds_calls_from_fragments() -> None:
    request = ChatRequest([ChatMessage("user", "hi")])
    a = StreamAssembler(request, rough_token_count)
    feed = [
        chunk({"reasoning_content": "thinking"}),
        chunk({"content": "Let me check."}),
        # llama-cpp-python repeats name and id on every fragment; OpenAI sends them once.
        chunk({"tool_calls": [{"index": 0, "id": "a", "name": "get_weather", "args": '{"ci'}]}),
        chunk({"tool_calls": [{"index": 0, "id": "a", "name": "get_weather", "args": 'ty": 1}'}]}),
        chunk({"tool_calls": [{"index": 1, "id": "b", "name": "look", "args": ""}]}),
        chunk({"tool_calls": [{"index": 1, "name": "up", "args": "{}"}]}),
        chunk(finish="stop"),
        chunk(
            usage=SimpleNamespace(prompt_tokens=9, completion_tokens=4, prompt_tokens_details=None)
        ),
    ]
    events = [e for c in feed for e in a.feed(c)] + list(a.finish())
    assert events[0] == ThoughtDelta("thinking")
    assert events[1] == TextDelta("Let me check.")
    finals = [e for e in events if isinstance(e, ToolCallFinal)]
    assert finals == [
        ToolCallFinal("a", "get_weather", {"city": 1}, '{"city": 1}'),
        ToolCallFinal("b", "lookup", {}, "{}"),
    ]
    assert events[-2:] == [Usage(9, 4), Done("tool_calls")]


def test_assembler_without_finish_reason_is_interrupted() -> None:
    a = StreamAssembler(ChatRequest([]), rough_token_count)
    list(a.feed(chunk({"content": "half"})))
    [err] = list(a.finish())
    assert isinstance(err, ProviderError) and err.reason == "stream_interrupted"


def test_token_count_never_downloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken's encodings are not bundled: with an empty cache the count falls back to
    the rough estimate instead of fetching the file."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    import tiktoken.load

    fetched: list[str] = []
    original = tiktoken.load.read_file

    def spy(blobpath: str) -> bytes:
        fetched.append(blobpath)
        return original(blobpath)

    monkeypatch.setattr(tiktoken.load, "read_file", spy)
    _offline_encoding.cache_clear()
    p = OpenAICompatProvider(OpenAIOptions(model="gpt-4o", model_id="openai:gpt-4o"))
    request = ChatRequest([ChatMessage("user", "hello " * 40)])
    assert p.count_tokens(request) == rough_token_count(request)
    assert fetched == [] and list(tmp_path.iterdir()) == []
    _offline_encoding.cache_clear()


def test_usage_adds_up_and_goes_on_the_wire_as_the_protocol_spells_it() -> None:
    from threadline_protocol.messages import Usage as WireUsage

    turn = Usage(100, 20, cache_read_tokens=60) + Usage(130, 5, cache_write_tokens=9)
    assert turn == Usage(230, 25, 60, 9)
    assert turn.total_tokens == 255
    wire = turn.wire()
    assert wire == {
        "inputTokens": 230,
        "outputTokens": 25,
        "cachedReadTokens": 60,
        "cachedWriteTokens": 9,
        "totalTokens": 255,
    }
    as_protocol = WireUsage(
        input_tokens=230,
        output_tokens=25,
        cached_read_tokens=60,
        cached_write_tokens=9,
        total_tokens=255,
    )
    assert WireUsage.model_validate(wire) == as_protocol
    assert as_protocol.wire() == wire
