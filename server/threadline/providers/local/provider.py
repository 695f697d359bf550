"""The Provider for the embedded model: a worker thread per ``stream()``.

Generation runs in its own worker thread; events reach the async side through a
:class:`~.handoff.Handoff`, which never makes the thread wait for the event loop.
Closing the async generator, or cancelling the task iterating it, sets the job's
cancel flag, which the worker checks between tokens, between prefill chunks and while
waiting for the model lock.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field

import anyio
import anyio.to_thread

from ..base import (
    ChatMessage,
    ChatRequest,
    Done,
    FinishReason,
    ProviderError,
    ProviderEvent,
    StatusNotice,
    TextDelta,
    Usage,
    rough_token_count,
)
from .chatml import next_message_segments, offers_tools, render_segments
from .generation import Cancelled, Generator
from .handoff import Handoff, HandoffClosed
from .model import LocalModel, LocalModelError
from .tool_calls import MAX_TOOL_CALLS, TOOL_ARGS_MAX_TOKENS, ToolCallPolicy, generate_with_tools

DEFAULT_MAX_TOKENS = 1024
DEFAULT_TEMPERATURE = 0.2
BURST_SECONDS = 0.05
"""Tokens reach the engine at most this often (the first at once), so at 100+ tokens/s
it journals and announces a few at a time instead of each one: measured 490 → 460 ms
of sidecar CPU per 64-token answer, for at most 50 ms more before a token shows."""


@dataclass(eq=False)
class _Job:
    cancel: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    started: float = field(default_factory=time.perf_counter)
    cancel_requested: float | None = None
    finished: float | None = None
    warmed: int = 0
    """Tokens evaluated after the answer, ahead of the session's next prompt."""

    def request_cancel(self) -> None:
        if not self.cancel.is_set():
            self.cancel_requested = time.perf_counter()
            self.cancel.set()


class LocalProvider:
    """The Provider for the embedded SmolLM2 model (``model_id`` ``local:smollm2-135m``)."""

    def __init__(
        self,
        model: LocalModel | None = None,
        *,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        default_temperature: float = DEFAULT_TEMPERATURE,
        tool_args_max_tokens: int = TOOL_ARGS_MAX_TOKENS,
        max_tool_calls: int = MAX_TOOL_CALLS,
        suppress_repeated_calls: bool = True,
    ) -> None:
        # Share one LocalModel between providers by passing it (the registry does);
        # no module-level cache, so each server owns its model.
        self._model = model if model is not None else LocalModel()
        self._default_max_tokens = default_max_tokens
        self._default_temperature = default_temperature
        self._tool_policy = ToolCallPolicy(
            args_max_tokens=tool_args_max_tokens,
            max_calls=max_tool_calls,
            suppress_repeated=suppress_repeated_calls,
        )
        self._jobs: set[_Job] = set()
        self.last_job: _Job | None = None

    @property
    def model(self) -> LocalModel:
        return self._model

    @property
    def model_id(self) -> str:
        return f"local:{self._model.name}"

    @property
    def context_window(self) -> int:
        return self._model.n_ctx

    def count_tokens(self, request: ChatRequest) -> int:
        """Exact prompt tokens with the model's tokenizer (a rough estimate before load)."""
        if not self._model.loaded:
            return rough_token_count(request)
        return len(self._model.tokenize_segments(render_segments(request)))

    async def aclose(self) -> None:
        """Stop this provider's generations. The (shared) model stays loaded."""
        jobs = list(self._jobs)
        for job in jobs:
            job.request_cancel()

        def join() -> None:
            for job in jobs:
                if job.thread is not None:
                    job.thread.join(timeout=5)

        if jobs:
            await anyio.to_thread.run_sync(join)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[ProviderEvent, None]:
        if not self._model.loaded:
            # The first answer after a start waits for the load (seconds on a small
            # machine): clients say why instead of a bare "thinking".
            yield StatusNotice(f"loading the local model {self._model.name}…")
        try:
            await self._model.load()
        except LocalModelError as e:
            yield ProviderError(reason="local_model_unavailable", message=str(e))
            return
        handoff = Handoff[ProviderEvent](BURST_SECONDS)
        job = _Job()
        job.thread = threading.Thread(
            target=self._run_job,
            args=(job, request, handoff),
            name="threadline-local-generate",
            daemon=True,
        )
        self._jobs.add(job)
        self.last_job = job
        job.thread.start()
        terminal = False
        try:
            while (events := await handoff.take()) is not None:
                for event in events:
                    if isinstance(event, (Done, ProviderError)):
                        terminal = True
                    yield event
            if not terminal:
                yield ProviderError(
                    reason="local_model_error", message="local generation ended unexpectedly"
                )
        finally:
            if job.finished is None:
                job.request_cancel()
            handoff.abandon()

    # -- worker thread -----------------------------------------------------

    def _run_job(self, job: _Job, request: ChatRequest, handoff: Handoff[ProviderEvent]) -> None:
        cancel = job.cancel

        def emit(event: ProviderEvent) -> None:
            if cancel.is_set():
                raise Cancelled
            try:
                handoff.put(event)
            except HandoffClosed as e:  # the consumer has gone
                cancel.set()
                raise Cancelled from e

        try:
            if not self._model.lock.acquire(blocking=False):
                emit(StatusNotice("local model is busy with another request; waiting"))
                if not self._model.acquire(cancel):
                    return
            try:
                job.warmed = self._generate(request, emit, cancel)
            finally:
                self._model.lock.release()
        except Cancelled:
            pass
        except Exception as e:
            with contextlib.suppress(Cancelled):
                emit(ProviderError(reason="local_model_error", message=_describe(e)))
        finally:
            job.finished = time.perf_counter()
            self._jobs.discard(job)
            handoff.finish()

    def _generate(
        self,
        request: ChatRequest,
        emit: Callable[[ProviderEvent], None],
        cancel: threading.Event,
    ) -> int:
        """Answers ``request``; returns how many tokens it evaluated ahead after."""
        llm = self._model.llama
        n_ctx = llm.n_ctx()
        prompt = self._model.tokenize_segments(render_segments(request))
        if len(prompt) >= n_ctx:
            emit(
                ProviderError(
                    reason="local_model_error",
                    message=f"prompt is {len(prompt)} tokens; the local model's context "
                    f"window is {n_ctx}",
                )
            )
            return 0
        gen = Generator(llm, cancel, self._model.prompt_cache)
        gen.prefill(prompt)
        temperature = (
            request.temperature if request.temperature is not None else self._default_temperature
        )
        max_tokens = request.max_tokens or self._default_max_tokens

        said: list[str] = []

        def text_out(text: str) -> None:
            said.append(text)
            emit(TextDelta(text))

        finish: FinishReason
        if not offers_tools(request):
            finish = gen.reply(
                prompt, max_tokens=max_tokens, temperature=temperature, on_text=text_out
            )
        else:
            finish = generate_with_tools(
                request,
                gen,
                self._model.tokenize,
                prompt,
                policy=self._tool_policy,
                max_tokens=max_tokens,
                temperature=temperature,
                emit=emit,
                text_out=text_out,
            )
        emit(
            Usage(
                input_tokens=len(prompt),
                output_tokens=gen.generated,
                cache_read_tokens=min(gen.reused, len(prompt)),
            )
        )
        emit(Done(finish))
        if not offers_tools(request) and request.purpose == "turn":
            # Still under the lock, after the answer is out: the next prompt of this
            # session goes on where this answer ends, with "<|im_end|>", "<|im_start|>"
            # and the next message's role; evaluated now, its first token comes that
            # much sooner (measured ~40 ms of its ~215 ms at 8 tokens an answer).
            follow = [*request.messages, ChatMessage("assistant", "".join(said))]
            return gen.warm(self._model.tokenize_segments(next_message_segments(follow)))
        return 0


def _describe(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return f"{type(e).__name__}: {text}" if not text.startswith(type(e).__name__) else text
