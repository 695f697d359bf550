"""After each chat answer, the shared server evaluates what the next turn starts with.

A session's next prompt goes on where the last answer ended: the rest of the answer as
the chat template closes it (``<|im_end|>``; the last token sampled, which llama.cpp has
not evaluated when the answer stopped at its length) and the opening of the next user
message (``<|im_start|>user``). The embedded model evaluates those tokens after each
answer (``Generator.warm``); ``llama_cpp.server`` has no such step, so every later turn
evaluated them before its first token (~35 tokens a turn where its own message is ~26:
turn 8 at 1.25–1.4× turn 1, a fork's first turn 1.2× its parent's).

:class:`Ahead` does it in ``warmserver``'s process. When a completion's state has been
kept (:class:`KeptStates` calls it on the worker thread, before the response's last
event goes out) it queues on the model's inner lock, the one every request's model
use holds (``get_llama_proxy``); the lock is fair, so it runs as soon as that response
lets go of the model, after the answer has been sent (the turn's end waits for
nothing) and before any request that arrives after the answer (if one is already
waiting for the model then, it runs instead: it evaluates those tokens anyway). It
evaluates the
closing and opening tokens after that completion (at most ``WARM_MAX``, only when the
context still holds the completion, token for token: a request queued earlier, from
another sidecar, changes it and nothing is done) and keeps that state in
:class:`KeptStates` in place of the completion's. The next turn of that session, from
whichever sidecar, finds them evaluated in the context or restores them from the
cache. llama-cpp-python matches prompts by tokens, so a guess that went wrong (an
answer the client renders differently, a tool result next) costs the few tokens
evaluated and nothing else.

The opening is read from the chat template the server formats with (the GGUF's own, or
``chatml``), rendered around two marker messages; with another chat format or handler
there is none and nothing is evaluated ahead.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TYPE_CHECKING

import anyio.from_thread
import anyio.to_thread

from ..local.generation import warm_ahead
from .keptstates import KeptStates

if TYPE_CHECKING:
    from llama_cpp import Llama

_ANSWER = "THREADLINE-ANSWER-MARK"
_NEXT = "THREADLINE-NEXT-MARK"


def chat_template(llm: Llama) -> str | None:
    """The Jinja template ``llm``'s chat completions are formatted with, if known."""
    from llama_cpp.llama_chat_format import (
        CHATML_CHAT_TEMPLATE,
        guess_chat_format_from_gguf_metadata,
    )

    if llm.chat_handler is not None:
        return None
    own = llm.metadata.get("tokenizer.chat_template")
    # A format guessed from the GGUF's template is that template, named.
    guessed = guess_chat_format_from_gguf_metadata(llm.metadata)
    if own and llm.chat_format in ("chat_template.default", guessed):
        return own
    return CHATML_CHAT_TEMPLATE if llm.chat_format == "chatml" else None


def next_turn_opening(llm: Llama) -> list[int]:
    """The tokens the chat template puts between an answer's text and the next user
    message's text (``<|im_end|>\\n<|im_start|>user\\n`` in ChatML); none if unknown."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = chat_template(llm)
    if template is None:
        return []

    def text(token: int) -> str:
        return llm.detokenize([token], special=True).decode(errors="replace")

    formatter = Jinja2ChatFormatter(
        template=template, eos_token=text(llm.token_eos()), bos_token=text(llm.token_bos())
    )
    try:
        prompt = formatter(
            messages=[
                {"role": "system", "content": "S"},
                {"role": "user", "content": "U"},
                {"role": "assistant", "content": _ANSWER},
                {"role": "user", "content": _NEXT},
            ]
        ).prompt
    except Exception:  # a template that refuses this conversation: no opening known
        return []
    start = prompt.find(_ANSWER)
    end = prompt.find(_NEXT, start)
    if start < 0 or end < 0:
        return []
    between = prompt[start + len(_ANSWER) : end]
    return llm.tokenize(between.encode(), add_bos=False, special=True) if between else []


class Ahead:
    """Evaluates the next turn's opening after each completion (see the module)."""

    def __init__(self, llm: Llama, cache: KeptStates) -> None:
        self._llm = llm
        self._cache = cache
        self.opening = next_turn_opening(llm)
        self._tasks: set[asyncio.Task[None]] = set()

    def after(self, answered: tuple[int, ...]) -> None:
        """Called on the worker thread that just kept ``answered``'s state (the
        completion's prompt and answer), while its request still holds the model."""
        if not self.opening:
            return
        try:
            anyio.from_thread.run_sync(self._queue, answered)
        except RuntimeError as exc:  # not a worker thread of the server's loop: the
            # completion must not fail for it; the next turn evaluates those tokens
            print(f"threadline ahead: not queued: {exc!r}", file=sys.stderr, flush=True)

    def _queue(self, answered: tuple[int, ...]) -> None:
        task = asyncio.get_running_loop().create_task(self._run(answered))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, answered: tuple[int, ...]) -> None:
        from llama_cpp.server.app import llama_inner_lock, llama_outer_lock

        try:
            async with llama_inner_lock:  # queued now: first after this request
                # A request already waiting (it holds the outer lock until it has the
                # inner one) evaluates these tokens with its own, in one batch: a
                # batch of its own would only cost it the batch's fixed cost.
                if not llama_outer_lock.locked():
                    await anyio.to_thread.run_sync(self.evaluate, answered)
        except Exception as exc:  # never the server's end: the next turn evaluates them
            print(f"threadline ahead: failed: {exc!r}", file=sys.stderr, flush=True)

    def evaluate(self, answered: tuple[int, ...]) -> int:
        """On the held model: evaluate ``answered``'s unevaluated end and the opening
        after it, and keep that state. Returns the tokens evaluated."""
        llm = self._llm
        t0 = time.perf_counter()
        done = warm_ahead(llm, [*answered, *self.opening])
        if done:
            t1 = time.perf_counter()
            kept = self._cache.keep_ahead(llm, answered)
            t2 = time.perf_counter()
            # One line per answer in the server's log (not the cache's line, which
            # counts completions).
            print(
                f"threadline ahead: evaluated {done} tokens after the answer, context "
                f"{llm.n_tokens} tokens, {'kept' if kept else 'not kept'}, in "
                f"{(t1 - t0) * 1000:.0f} + {(t2 - t1) * 1000:.0f} ms",
                file=sys.stderr,
                flush=True,
            )
        return done
