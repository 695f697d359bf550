"""After each chat answer, the shared server evaluates what the next turn starts with.

A session's next prompt goes on where the last answer ended: the rest of the answer as
the chat template closes it (``<|im_end|>``; the last token sampled, which llama.cpp has
not evaluated when the answer stopped at its length) and the opening of the next user
message (``<|im_start|>user``). The embedded model evaluates those tokens after each
answer (``Generator.warm``); ``llama_cpp.server`` has no such step, so every later turn
evaluated them before its first token (~35 tokens a turn where its own message is ~26:
turn 8 at 1.25–1.4× turn 1, a fork's first turn 1.2× its parent's).

:class:`Ahead` does it in ``warmserver``'s process: when a ``/v1/chat/completions``
response has been sent in full (the client has its answer and the turn has ended), it
takes the model through the app's own dependency (``get_llama_proxy``: the same locks
every route takes, so no request runs meanwhile; skipped if one is already running or
waiting: it would replace the context anyway), evaluates the closing and opening
tokens after the last completion (at most ``WARM_MAX``, only when the context still
holds that completion, token for token) and keeps that state in :class:`KeptStates` in
place of the completion's. The next turn of that session, from whichever sidecar,
finds them evaluated in the context or restores them from the cache; llama-cpp-python
matches prompts by tokens, so a guess that went wrong (an answer the client renders
differently, a tool result next) costs the few tokens evaluated and nothing else.

The opening is read from the chat template the server formats with (the GGUF's own, or
``chatml``), rendered around two marker messages; with another chat format or handler
there is none and nothing is evaluated ahead.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from ..local.generation import warm_ahead
from .keptstates import KeptStates

if TYPE_CHECKING:
    from llama_cpp import Llama

CHAT_PATH = "/v1/chat/completions"

_ANSWER = "THREADLINE-ANSWER-MARK"
_NEXT = "THREADLINE-NEXT-MARK"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


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
    """Evaluates the next turn's opening after each chat answer (see the module)."""

    def __init__(self, llm: Llama, cache: KeptStates) -> None:
        self._llm = llm
        self._cache = cache
        self.opening = next_turn_opening(llm)
        self._tasks: set[asyncio.Task[None]] = set()

    def evaluate(self) -> int:
        """On the held model: evaluate the last completion's unevaluated end and the
        opening after it, and keep that state. Returns the tokens evaluated."""
        answered = self._cache.last
        self._cache.last = None  # once per completion
        if answered is None or not self.opening:
            return 0
        llm = self._llm
        done = warm_ahead(llm, [*answered, *self.opening])
        if done:
            kept = self._cache.keep_ahead(llm, answered)
            # One line per answer in the server's log (not the cache's line, which
            # counts completions).
            print(
                f"threadline ahead: evaluated {done} tokens after the answer, context "
                f"{llm.n_tokens} tokens, {'kept' if kept else 'not kept'}",
                file=sys.stderr,
                flush=True,
            )
        return done

    async def after_answer(self) -> None:
        """Evaluate ahead under the server's model locks, unless a request holds or
        waits for them (then the context is about to change anyway)."""
        from llama_cpp.server import app
        from starlette.concurrency import run_in_threadpool

        if app.llama_outer_lock.locked() or app.llama_inner_lock.locked():
            self._cache.last = None
            return
        async with contextlib.asynccontextmanager(app.get_llama_proxy)():
            await run_in_threadpool(self.evaluate)

    def wrap(self, inner: ASGIApp) -> ASGIApp:
        """``inner`` (the server's app), evaluating ahead after each chat completion
        has been sent: in a task of its own, so the response's end waits for nothing."""

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            await inner(scope, receive, send)
            if scope["type"] == "http" and scope.get("path") == CHAT_PATH:
                task = asyncio.get_running_loop().create_task(self._after())
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

        return app

    async def _after(self) -> None:
        try:
            await self.after_answer()
        except Exception as exc:  # never the server's end: the next turn evaluates them
            print(f"threadline ahead: failed: {exc!r}", file=sys.stderr, flush=True)
