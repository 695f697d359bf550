"""The shared llama_cpp.server's prompt cache (`KeptStates`) in process, on a real
SmolLM2 model: its bound counts every byte it holds (traced by ``tracemalloc``, which
sees numpy's and Python's allocations), unlike llama-cpp-python's ``LlamaRAMCache``,
and a state it gives back restores the prompt it was saved for.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator

import llama_cpp
import pytest

from threadline.providers.local import LocalModelError, find_model_path
from threadline.providers.modelserver.keptstates import KeptStates

pytestmark = [pytest.mark.model, pytest.mark.timeout(300)]

MIB = 1 << 20


@pytest.fixture(scope="module")
def llm() -> Iterator[llama_cpp.Llama]:
    try:
        path = find_model_path()
    except LocalModelError as exc:
        pytest.skip(str(exc))
    model = llama_cpp.Llama(
        str(path), n_ctx=512, n_threads=1, logits_all=False, verbose=False, flash_attn=False
    )
    yield model
    model.close()


def prompt(llm: llama_cpp.Llama, who: int) -> list[int]:
    text = f"Session {who}: " + " ".join(f"word{who}x{i}" for i in range(30))
    return llm.tokenize(text.encode())


def evaluated(llm: llama_cpp.Llama, tokens: list[int]) -> llama_cpp.LlamaState:
    llm.reset()
    llm.eval(tokens)
    return llm.save_state()


def traced_growth(llm: llama_cpp.Llama, cache: object, sessions: range) -> int:
    """Bytes still allocated after each session's prompt was evaluated and its state
    saved (as llama-cpp-python does after a completion) into ``cache``."""
    prompts = [prompt(llm, i) for i in sessions]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for p in prompts:
            cache[p] = evaluated(llm, p)  # type: ignore[index]
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_the_bound_counts_what_is_kept(llm: llama_cpp.Llama) -> None:
    one = evaluated(llm, prompt(llm, 0)).llama_state_size
    cache = KeptStates(int(2.5 * one))  # room for two states, not three
    growth = traced_growth(llm, cache, range(6))
    assert len(cache) == 2 and cache.dropped == 4
    assert cache.cache_size <= cache.capacity_bytes
    # What it holds is what it counts (the logits row and token ids included).
    assert abs(growth - cache.cache_size) < 64 * 1024, (growth, cache.cache_size)

    # llama-cpp-python's own cache, same states: its count leaves the logits out.
    peer = llama_cpp.LlamaRAMCache(capacity_bytes=int(2.5 * one))
    peer_growth = traced_growth(llm, peer, range(2))
    assert peer.cache_size <= peer.capacity_bytes < peer_growth / 2, (peer.cache_size, peer_growth)


def test_a_kept_state_restores_its_prompt_and_supersedes_its_prefix(
    llm: llama_cpp.Llama,
) -> None:
    cache = KeptStates(64 * MIB)
    a, b = prompt(llm, 1), prompt(llm, 2)
    cache[a] = evaluated(llm, a)
    cache[b] = evaluated(llm, b)
    longer = a + llm.tokenize(b" and then some more words", add_bos=False)
    llm.load_state(cache[longer])  # A's state: the longest prefix of A's next prompt
    assert llm.n_tokens == len(a) and llm.input_ids[: len(a)].tolist() == a
    before = llama_cpp.llama_perf_context(llm.ctx).n_p_eval
    llm.eval(longer[len(a) :])  # only what follows is evaluated, on A's restored state
    llama_cpp.llama_synchronize(llm.ctx)  # (the counters move when the decode is done)
    assert llama_cpp.llama_perf_context(llm.ctx).n_p_eval - before == len(longer) - len(a)
    cache[longer] = llm.save_state()
    assert len(cache) == 2, "A's first state is a prefix of its next: dropped"
    assert cache[[*a, 0]].n_tokens == len(longer)


def test_a_kept_state_shares_with_a_prompt_only_the_tokens_it_holds(
    llm: llama_cpp.Llama,
) -> None:
    """The model's token buffer keeps an older, longer context's tokens past the ones it
    holds; llama-cpp-python compares a kept state's buffer whole with the prompt and
    loads the state when that shares more than the context. A kept state's buffer
    holds nothing past its tokens, so it never seems to share more than it holds."""
    longer, short = prompt(llm, 3), prompt(llm, 4)[:20]
    llm.reset()
    llm.eval(longer)
    llm.reset()
    llm.eval(short)  # the buffer past these 20 tokens still holds `longer`'s
    cache = KeptStates(64 * MIB)
    cache[short] = llm.save_state()
    follows = short + longer[len(short) :]
    kept = cache[follows]
    assert kept.n_tokens == len(short)
    assert llama_cpp.Llama.longest_token_prefix(kept.input_ids.tolist(), follows) == len(short)
