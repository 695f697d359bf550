"""Evaluated prompts kept, so switching sessions does not evaluate them again.

llama.cpp keeps one evaluated prompt in its KV cache, and a request whose tokens start
with it evaluates only the rest (`Llama.generate`'s prefix match): the next turn of
the same session is cheap. A turn of *another* session (a second editor tab, a fork
answered in between) overwrites it, and the first session's next turn then evaluates
its whole history again (measured: 4.4–9.7 s instead of 0.2–0.3 s at 450–620 tokens).

So, just before a prompt would overwrite what the context holds, that sequence's KV
state is copied out (``llama_state_seq_get_data``: only the cells in use, ~23 KB a
token for SmolLM2-135M) and kept keyed by its tokens; a prompt that shares a longer
prefix with a kept state than with the live one gets it copied back in
(``llama_state_seq_set_data``), and llama.cpp evaluates only the tokens after it.
Bounded by bytes, least recently used dropped first; nothing is copied while one
session is prompted turn after turn.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .tokenstates import KeptByTokens, Tokens, common_prefix

if TYPE_CHECKING:
    from llama_cpp import Llama

DEFAULT_CAPACITY = 256 << 20
"""Bytes of kept states: about 11,000 tokens of SmolLM2-135M's KV cache (e.g. eight
sessions of 1,400 tokens). ``THREADLINE_PROMPT_CACHE_MB`` sets it; 0 turns it off."""
MIN_TOKENS = 16
"""The live state is kept only when a prompt would drop this many of its tokens or
more: the next turn of the same session drops just the end of its answer as
re-rendered (nothing worth a copy), another session's prompt drops all but the shared
system prompt."""
SEQ = 0
"""llama-cpp-python's one sequence."""
ENV = "THREADLINE_PROMPT_CACHE_MB"


def capacity_from_env() -> int:
    """``THREADLINE_PROMPT_CACHE_MB`` in bytes (0: off), else `DEFAULT_CAPACITY`."""
    raw = os.environ.get(ENV, "").strip()
    try:
        return max(0, int(float(raw) * (1 << 20))) if raw else DEFAULT_CAPACITY
    except ValueError:
        return DEFAULT_CAPACITY


@dataclass(frozen=True, slots=True)
class _Kept:
    tokens: tuple[int, ...]
    state: bytes


class PrefixCache:
    """Bounded, least recently used; used only under the model's lock."""

    def __init__(self, capacity_bytes: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity_bytes
        self._kept = KeptByTokens[_Kept](capacity_bytes)
        self.restores = 0
        """States copied back in (a switch that did not re-evaluate its prefix)."""

    @property
    def size(self) -> int:
        return self._kept.size

    def __len__(self) -> int:
        return len(self._kept)

    def prepare(self, llm: Llama, prompt: Sequence[int]) -> int:
        """Before ``prompt`` is evaluated: keep the live state if ``prompt`` would
        overwrite it, restore a kept one that shares more of ``prompt``. Returns how
        many of the prompt's tokens are already evaluated in the context now."""
        live = tuple(llm.input_ids[: llm.n_tokens].tolist())
        shared = common_prefix(live, prompt)
        found = self._kept.longest(prompt)
        best = self._kept[found[0]] if found and found[1] > shared else None
        best_shared = found[1] if best is not None and found else shared
        if self.capacity <= 0:
            return shared
        if len(live) - shared >= MIN_TOKENS and live not in self._kept:
            self._keep(llm, live)  # what this prompt would overwrite: another session's
        if best is None:
            return shared
        self._load(llm, best)
        self._kept.touch(best.tokens)
        self.restores += 1
        return best_shared

    def _keep(self, llm: Llama, tokens: tuple[int, ...]) -> None:
        import llama_cpp

        seq = llama_cpp.llama_seq_id(SEQ)
        size = llama_cpp.llama_state_seq_get_size(llm.ctx, seq)
        if size <= 0 or size > self.capacity:
            return
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(llm.ctx, buffer, size, seq)
        if written <= 0:
            return
        self.remember(tokens, bytes(memoryview(buffer)[:written]))

    def remember(self, tokens: Tokens, state: bytes) -> None:
        """Keep ``state`` (a sequence's KV state) for ``tokens``, dropping the least
        recently used states beyond the capacity."""
        # Kept states that are a prefix of this one add nothing any more.
        self._kept.keep(
            tokens, _Kept(tokens, state), len(state), lambda old: old == tokens[: len(old)]
        )

    @staticmethod
    def _load(llm: Llama, kept: _Kept) -> None:
        """The kept sequence in place of the live one; ``input_ids``/``n_tokens`` say
        so, and llama-cpp-python's prefix match then evaluates only what follows."""
        import llama_cpp

        seq = llama_cpp.llama_seq_id(SEQ)
        memory = llama_cpp.llama_get_memory(llm.ctx)
        if memory is None:
            return
        llama_cpp.llama_memory_seq_rm(memory, seq, -1, -1)
        llm.n_tokens = 0
        data = (ctypes.c_uint8 * len(kept.state)).from_buffer_copy(kept.state)
        if llama_cpp.llama_state_seq_set_data(llm.ctx, data, len(kept.state), seq) == 0:
            return  # not restored: the context is empty and the prompt evaluated whole
        n = len(kept.tokens)
        llm.input_ids[:n] = kept.tokens
        llm.n_tokens = n
