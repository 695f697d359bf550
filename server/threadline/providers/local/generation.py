"""Completions on a locked llama, cancellable between tokens and prefill chunks.

The worker checks a cancel flag between tokens (through a llama
``stopping_criteria``, so even grammar-constrained calls stop within one token) and
between prompt-prefill chunks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..base import FinishReason
from .chatml import IM_END

if TYPE_CHECKING:
    from llama_cpp import Llama

DEFAULT_TOP_P = 0.9
PREFILL_CHUNK = 64
"""Prompt tokens evaluated between cancellation checks (measured 0.1-0.9 s a chunk)."""


class Cancelled(Exception):
    """Generation was cancelled (flag set or the consumer went away)."""


class Generator:
    """Runs completions on a locked llama, honouring ``cancel`` between tokens."""

    def __init__(self, llm: Llama, cancel: threading.Event) -> None:
        self._llm = llm
        self._cancel = cancel
        self.generated = 0

    def _check(self) -> None:
        if self._cancel.is_set():
            raise Cancelled

    def _stop_criterion(self, input_ids: Any, logits: Any) -> bool:
        self.generated += 1
        return self._cancel.is_set()

    def prefill(self, tokens: list[int]) -> None:
        """Evaluate the prompt in chunks so a cancel lands within one chunk.

        Each chunk is a one-token completion of a longer prefix; llama-cpp's prefix
        cache keeps what was evaluated, so the real call only decodes the tail.
        """
        llm = self._llm
        cached = llm.input_ids[: llm.n_tokens].tolist()
        done = _common_prefix(cached, tokens)
        end = len(tokens) - 1
        while end - done > PREFILL_CHUNK:
            self._check()
            done += PREFILL_CHUNK
            llm.create_completion(tokens[:done], max_tokens=1, temperature=0.0)
        self._check()

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


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
