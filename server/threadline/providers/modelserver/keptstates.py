"""A prompt cache for llama_cpp.server whose size bound counts what it keeps.

llama-cpp-python asks a model's cache (`Llama.set_cache`, any ``BaseLlamaCache``)
for the longest kept prefix of each prompt and loads that state when it shares more
of the prompt than the context does; after each completion it hands the cache the
state just saved (`Llama.save_state`). Its own ``LlamaRAMCache`` counts only the
llama.cpp state bytes of each entry, not the logits array saved with it
(``min(tokens, n_batch) × n_vocab`` floats; with the server's default ``logits_all``,
up to ``n_ctx`` rows): for SmolLM2 at 450 tokens, 10 MB counted and 88 MB more not.
It also keeps every turn of a session as its own entry though each is a prefix of the
next.

:class:`KeptStates` counts every array it keeps. Without ``logits_all`` those logits
are never written (llama-cpp-python samples inside llama.cpp, and only logprobs read
them), so it keeps one zero row in their place (``Llama.load_state`` assigns it to the
rows of the state's tokens, and one row broadcasts). A state whose key is, but for fewer
than `SUPERSEDED` tokens at its end, a prefix of the new one is dropped: the new one
restores as much of any prompt (the same session's previous turn; a fork's parent).
Least recently saved (the session least recently prompted) first beyond the bound; a
state larger than the bound is not kept.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable, Sequence

import llama_cpp
import numpy as np
import numpy.typing as npt
from llama_cpp import BaseLlamaCache, Llama, LlamaState

from ..local.tokenstates import KeptByTokens, common_prefix

SUPERSEDED = 16
"""A kept state sharing all but this many of its last tokens with a new one is
dropped: the end of an answer as sampled and as the chat template renders it next
turn may differ by a token or two."""


def kept_bytes(state: LlamaState) -> int:
    """Every byte the entry holds: llama.cpp's state and the arrays beside it."""
    return len(state.llama_state) + state.input_ids.nbytes + state.scores.nbytes


class KeptStates(BaseLlamaCache):
    """Bounded by the bytes it holds, least recently saved dropped first."""

    def __init__(
        self,
        capacity_bytes: int,
        *,
        keep_logits: bool = False,
        after: Callable[[tuple[int, ...]], None] | None = None,
    ) -> None:
        super().__init__(capacity_bytes)
        self.keep_logits = keep_logits
        self._kept = KeptByTokens[LlamaState](capacity_bytes)
        self.after = after
        """Told each completion's tokens (prompt and answer) once its state is kept, on
        the thread that ran it (`ahead.Ahead.after`)."""

    @property
    def dropped(self) -> int:
        """States dropped to stay within the bound."""
        return self._kept.dropped

    @property
    def cache_size(self) -> int:
        return self._kept.size

    def __len__(self) -> int:
        return len(self._kept)

    def __bool__(self) -> bool:
        return True  # llama-cpp-python asks ``if self.cache``: empty is still a cache

    def _longest(self, key: Sequence[int]) -> tuple[int, ...] | None:
        found = self._kept.longest(key)
        return None if found is None else found[0]

    def __contains__(self, key: Sequence[int]) -> bool:
        return self._longest(key) is not None

    def __getitem__(self, key: Sequence[int]) -> LlamaState:
        found = self._longest(key)
        if found is None:
            raise KeyError("no kept state shares a prefix")
        # Not moved to the end: llama-cpp-python asks for every prompt and loads the
        # state only if it beats the context (a shared system prompt does not). A state
        # that is loaded is replaced by the next one saved, which goes to the end.
        return self._kept[found]

    def __setitem__(self, key: Sequence[int], value: LlamaState) -> None:
        tokens = tuple(key)
        self._keep(tokens, value if self.keep_logits else without_logits(value))
        # One line per completion in the server's log: what is kept, against the bound.
        print(
            f"threadline prompt cache: kept {len(self._kept)} states, {self._kept.size} of "
            f"{self.capacity_bytes} bytes, dropped {self.dropped}",
            file=sys.stderr,
            flush=True,
        )
        if self.after is not None:
            self.after(tokens)

    def keep_ahead(self, llm: Llama, answered: tuple[int, ...]) -> bool:
        """Keep what ``llm`` holds now (``answered``, the last completion's tokens, and
        the next turn's opening evaluated after it) in place of ``answered``'s state,
        which it supersedes; False if that state is no longer kept (dropped, or too
        large for the bound: so would this one be)."""
        if answered not in self._kept:
            return False
        seed = self._kept[answered].seed  # saved moments ago, from this model
        state = llm.save_state() if self.keep_logits else evaluated_state(llm, seed)
        self._keep(tuple(llm.input_ids[: llm.n_tokens].tolist()), state)
        return True

    def _keep(self, tokens: tuple[int, ...], state: LlamaState) -> None:
        self._kept.keep(
            tokens,
            state,
            kept_bytes(state),
            lambda old: len(old) - common_prefix(old, tokens) < SUPERSEDED,
        )


def evaluated_state(llm: Llama, seed: int) -> LlamaState:
    """``llm``'s state as `without_logits` keeps it, copied without the logits rows
    ``Llama.save_state`` copies first (``n_tokens × n_vocab`` floats, ~59 MB at 300
    tokens of SmolLM2) only for them to be dropped."""
    size = llama_cpp.llama_state_get_size(llm.ctx)
    buffer = (ctypes.c_uint8 * size)()
    n = llama_cpp.llama_state_get_data(llm.ctx, buffer, size)
    return LlamaState(
        input_ids=only_held(llm.input_ids, llm.n_tokens),
        scores=np.zeros((1, llm.n_vocab()), dtype=np.single),
        n_tokens=llm.n_tokens,
        llama_state=ctypes.string_at(buffer, n),
        llama_state_size=n,
        seed=seed,
    )


def without_logits(state: LlamaState) -> LlamaState:
    """``state`` with its (never written) logits replaced by one zero row: ``load_state``
    assigns them to the model's rows for the state's tokens, and one row broadcasts (a
    full-shape array would be allocated and copied on every load only to write zeros).
    The token ids are kept whole (``load_state`` makes them the model's buffer), past
    the state's tokens blanked (`only_held`)."""
    return LlamaState(
        input_ids=only_held(state.input_ids, state.n_tokens),
        scores=np.zeros((1, state.scores.shape[1]), dtype=state.scores.dtype),
        n_tokens=state.n_tokens,
        llama_state=state.llama_state,
        llama_state_size=state.llama_state_size,
        seed=state.seed,
    )


def only_held(input_ids: npt.NDArray[np.intc], n_tokens: int) -> npt.NDArray[np.intc]:
    """A copy of the model's token buffer with what follows its ``n_tokens`` set to -1.
    llama-cpp-python loads a kept state when its token buffer, compared whole, shares
    more with the prompt than the context does; past ``n_tokens`` the buffer still holds
    an older, longer context's tokens, which matched the next message's first tokens
    when sessions ask alike ("Later Alone 1, question 3" after "Later Alone 0, question
    3"): the state the context already held was loaded again (50–500 ms under load,
    most of it ``load_state`` zeroing the logits rows)."""
    ids = input_ids.copy()
    ids[n_tokens:] = -1
    return ids
