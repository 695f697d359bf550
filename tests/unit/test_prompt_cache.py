"""The embedded model keeps evaluated prompts warm across sessions (issue 31).

Real SmolLM2 model, short answers. What proves a hit is llama.cpp's own counter of
prompt tokens evaluated (``llama_perf_context(ctx).n_p_eval``): a turn whose prefix
is reused evaluates only the tokens after it.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import llama_cpp
import pytest

from threadline.providers.base import ChatMessage, ChatRequest, TextDelta, Usage
from threadline.providers.local import LocalModel, LocalProvider
from threadline.providers.local.prefixcache import PrefixCache

SYSTEM = "You are a helpful assistant who answers briefly."
RIVERS = (
    "List three rivers of Europe, with their lengths in kilometres, the countries "
    "they flow through, the sea each one reaches and one city on each of them."
)
PLANETS = (
    "Name the planets of the solar system in order from the sun, with the number of "
    "moons each one has and whether it has rings, and say which one is the largest."
)


@pytest.fixture(scope="module")
def model() -> Iterator[LocalModel]:
    m = LocalModel()
    m.load_sync()
    yield m
    m.close()


def _evaluated(model: LocalModel) -> int:
    return int(llama_cpp.llama_perf_context(model.llama.ctx).n_p_eval)


async def _turn(
    provider: LocalProvider, messages: list[ChatMessage], text: str
) -> tuple[Usage, int]:
    """One short answer appended to ``messages``; its usage and the prompt tokens
    llama.cpp evaluated for it."""
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
    assert usage is not None
    messages.append(ChatMessage("assistant", "".join(parts)))
    return usage, _evaluated(provider.model) - before


@pytest.mark.model
async def test_switching_sessions_reuses_each_ones_evaluated_prompt(model: LocalModel) -> None:
    model.prompt_cache = PrefixCache()
    provider = LocalProvider(model)
    a = [ChatMessage("system", SYSTEM)]
    b = [ChatMessage("system", SYSTEM)]
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
    a = [ChatMessage("system", SYSTEM)]
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
    a = [ChatMessage("system", SYSTEM)]
    await _turn(provider, a, RIVERS)
    second, evaluated = await _turn(provider, a, "Which of them is the longest?")
    assert len(model.prompt_cache) == 0, "nothing of the session's was overwritten"
    assert second.cache_read_tokens > 0
    assert evaluated <= second.input_tokens - second.cache_read_tokens + 1


def test_the_cache_is_bounded_by_bytes_least_recently_used_first() -> None:
    cache = PrefixCache(100)
    for i in range(3):
        cache.remember((i,) * 40, b"x" * 40)
    assert len(cache) == 2 and cache.size == 80
    cache.remember((1,) * 50, b"y" * 10)  # (1,)*40 is a prefix of it: replaced
    assert len(cache) == 2 and cache.size == 50
