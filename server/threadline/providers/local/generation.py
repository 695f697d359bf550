"""Completions on a locked llama, cancellable between tokens and prefill chunks.

The worker checks a cancel flag between tokens (through a llama
``stopping_criteria``, so even grammar-constrained calls stop within one token) and
between prompt-prefill chunks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..base import FinishReason
from .chatml import IM_END
from .prefixcache import PrefixCache
from .tokenstates import common_prefix

if TYPE_CHECKING:
    from llama_cpp import Llama

DEFAULT_TOP_P = 0.9
PREFILL_CHUNK = 64
"""Prompt tokens evaluated between cancellation checks (measured 0.1-0.9 s a chunk)."""


WARM_MAX = 16
"""At most this many tokens are evaluated ahead for a session's next prompt."""


def warm_ahead(llm: Llama, tokens: list[int]) -> int:
    """Evaluate the few tokens of ``tokens`` after what the context holds, if it holds
    a prefix of them (else nothing: a guess that went wrong costs nothing). Returns how
    many were evaluated; never more than `WARM_MAX`. The caller holds the model: the
    embedded provider under its lock, the shared server's `ahead` under the server's."""
    held = llm.n_tokens
    if held == 0 or common_prefix(llm.input_ids[:held].tolist(), tokens) < held:
        return 0
    rest = tokens[held:]
    if not rest or len(rest) > WARM_MAX:
        return 0
    llm.eval(rest)
    return len(rest)


class Cancelled(Exception):
    """Generation was cancelled (flag set or the consumer went away)."""


class Generator:
    """Runs completions on a locked llama, honouring ``cancel`` between tokens."""

    def __init__(
        self, llm: Llama, cancel: threading.Event, cache: PrefixCache | None = None
    ) -> None:
        self._llm = llm
        self._cancel = cancel
        self._cache = cache
        self.generated = 0
        self.reused = 0
        """Prompt tokens already evaluated in the context when `prefill` began (kept
        from the session's last turn, or restored from the prompt cache)."""

    def _check(self) -> None:
        if self._cancel.is_set():
            raise Cancelled

    def _stop_criterion(self, input_ids: Any, logits: Any) -> bool:
        self.generated += 1
        return self._cancel.is_set()

    def prefill(self, tokens: list[int]) -> None:
        """Evaluate the prompt in chunks so a cancel lands within one chunk.

        Each chunk is a one-token completion of a longer prefix; llama-cpp's prefix
        cache keeps what was evaluated, so the real call only decodes the tail. What
        another session's prompt would overwrite is kept first, and a kept prompt
        that shares more with this one is put back (`PrefixCache`).
        """
        llm = self._llm
        if self._cache is not None:
            done = self._cache.prepare(llm, tokens)
        else:
            done = common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens)
        self.reused = done
        end = len(tokens) - 1
        while end - done > PREFILL_CHUNK:
            self._check()
            done += PREFILL_CHUNK
            llm.create_completion(tokens[:done], max_tokens=1, temperature=0.0)
        self._check()

    def warm(self, tokens: list[int]) -> int:
        """`warm_ahead` on this generator's model."""
        return warm_ahead(self._llm, tokens)

    def reply(
        self,
        tokens: list[int],
        *,
        max_tokens: int,
        temperature: float,
        on_text: Callable[[str], None],
    ) -> FinishReason:
        """Stream a free-text reply (no grammar) and say how it ended."""
        reason = self.complete(
            tokens, max_tokens=max_tokens, temperature=temperature, on_text=on_text
        )[1]
        return "length" if reason == "length" else "stop"

    def complete(
        self,
        tokens: list[int],
        *,
        max_tokens: int,
        temperature: float,
        grammar: Any = None,
        stop: list[str] | None = None,
        repeat_penalty: float = 1.1,
        on_text: Callable[[str], None] | None = None,
    ) -> tuple[str, str | None]:
        """Stream a completion; returns (text, finish_reason)."""
        from llama_cpp import StoppingCriteriaList

        self._check()
        chunks = self._llm.create_completion(
            tokens,
            stream=True,
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=DEFAULT_TOP_P,
            repeat_penalty=repeat_penalty,
            stop=stop if stop is not None else [IM_END],
            grammar=grammar,
            stopping_criteria=StoppingCriteriaList([self._stop_criterion]),
        )
        assert not isinstance(chunks, dict)
        parts: list[str] = []
        finish: str | None = None
        try:
            for chunk in chunks:
                self._check()
                choice = chunk["choices"][0]
                text = choice["text"]
                if text:
                    parts.append(text)
                    if on_text is not None:
                        on_text(text)
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        self._check()
        return "".join(parts), finish
