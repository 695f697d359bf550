"""OpenAI-compatible provider: chat completions streamed through the official ``openai`` SDK.

Works with OpenAI itself and with servers that speak the same API (llama.cpp,
llama-cpp-python, vLLM, Ollama, LM Studio, OpenRouter). The SDK is imported on the
first call, never at server start, and its own retries are off: retrying is a policy
(:mod:`.policies`), applied around this provider.

Stream handling: text deltas become ``TextDelta``; ``reasoning_content`` (llama.cpp,
DeepSeek, vLLM) or ``reasoning`` (OpenRouter, Ollama) deltas become ``ThoughtDelta``;
tool-call fragments are shown as ``ToolCallDelta`` and assembled, per index, into one
``ToolCallFinal`` each when the stream ends (some servers repeat the name and id on
every fragment, so a repeated name is not appended). A stream that ends without a
finish reason was cut off: that is a ``ProviderError`` (``stream_interrupted``), never
a silent success.

Servers differ, and the provider adapts by itself (what it learns is kept per server
and model in the home folder, :mod:`.traits`, and shown by ``threadline models``):

* **Empty answers to requests that offer tools.** llama-cpp-python's
  ``chatml-function-calling`` answers a streamed request that offers tools with an
  empty stream, and a non-streamed one with an empty message whenever the model
  chooses to answer in text. So an empty answer is retried before anything reaches
  the user: without streaming, then with ``tool_choice: "none"`` (the model's text
  answer). When a retry answers, the server is recorded as not streaming tool calls,
  and later requests that offer tools start without streaming.
* **Tool messages.** Before the first request that carries a tool result, a cheap
  probe (two one-token requests) compares the server's prompt-token counts of a long
  and a short tool result: equal counts mean ``role: "tool"`` messages are dropped by
  the chat template (llama-cpp-python again), so results go as user messages.
* An answer that is still empty (no text, thought or tool call) is a ``ProviderError``
  (``empty_answer``), never a silent empty end of turn.

Options (``[providers.X]`` in ``threadline.toml``) override what is learned:

* ``tool_results = "user"`` / ``"native"`` fixes how tool results are sent.
* ``stream_tools = false`` / ``true`` fixes whether requests that offer tools stream.
* ``max_tokens_param`` (``max_tokens`` or ``max_completion_tokens``; the latter is the
  default for api.openai.com), ``extra_body`` (merged into every request),
  ``tokenizer`` (a tiktoken encoding name), ``send_reasoning`` (send earlier
  reasoning back as ``reasoning_content``, which DeepSeek's tool loop wants).

Token counting uses tiktoken only when the encoding's file is already in tiktoken's
local cache: tiktoken downloads encodings on first use and this program must never
download at run time, so without a cached file the count is the rough estimate.
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anyio

from ..userconfig import Secret
from .base import (
    ChatMessage,
    ChatRequest,
    Done,
    FinishReason,
    ProviderError,
    ProviderEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallDelta,
    ToolCallFinal,
    Usage,
    rough_token_count,
)
from .configured import SdkProvider
from .sdk_stream import Assembler, MissingKey, relay
from .traits import ServerTraits, TraitStore, server_key

log = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "sk-no-key-required"
"""Sent to servers that need no key (the SDK refuses an empty one)."""

FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "refusal",
}


@dataclass(frozen=True, slots=True)
class OpenAIOptions:
    model: str
    """The model name the server expects."""
    model_id: str
    """Threadline's model string (``openai:gpt-4o-mini`` or a configured name)."""
    base_url: str | None = None
    api_key: Secret | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    context_window: int = 128_000
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    tool_results: Literal["native", "user", "auto"] = "auto"
    """``auto``: learn whether the server takes ``role: "tool"`` messages."""
    stream_tools: bool | None = None
    """``None``: learn whether the server streams requests that offer tools."""
    traits: TraitStore | None = field(default=None, repr=False, compare=False)
    """Where learned traits are kept (``None``: this process only)."""
    max_tokens_param: str | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    tokenizer: str | None = None
    send_reasoning: bool = False
    connect_timeout: float = 10.0

    @property
    def is_openai(self) -> bool:
        return self.base_url is None or self.base_url.rstrip("/") == OPENAI_BASE_URL


OUTPUT = (TextDelta, ThoughtDelta, ToolCallDelta, ToolCallFinal)
"""Events that make an answer non-empty."""

PROBE_RESULT = (
    "Result: the probe reports seventeen green lanterns, four silver bridges, nine quiet "
    "harbours, twelve amber windows and one long winding road through the northern hills."
)
"""A tool result long enough that a server rendering it shows in its token count."""


class OpenAICompatProvider(SdkProvider[OpenAIOptions]):
    def __init__(self, options: OpenAIOptions) -> None:
        super().__init__(options)
        self._store = options.traits or TraitStore(None)
        self._key = server_key(options.base_url, options.model)
        self._traits = self._store.get(self._key)
        self._probe_lock = anyio.Lock()

    @property
    def traits(self) -> ServerTraits:
        """What is known of the server (learned, or standard for api.openai.com)."""
        return self._traits

    def _learn(self, **changes: bool) -> None:
        self._traits = self._store.update(self._key, **changes)
        log.info("%s: learned %s", self.model_id, self._traits.describe())

    def count_tokens(self, request: ChatRequest) -> int:
        encoding = _offline_encoding(self.options.tokenizer or _encoding_name(self.options.model))
        if encoding is None:
            return rough_token_count(request)
        n = 3
        for m in request.messages:
            n += 4 + len(encoding.encode(m.content, disallowed_special=()))
            for c in m.tool_calls:
                n += len(encoding.encode(c.raw_arguments or json.dumps(c.arguments))) + 8
        for t in request.tools:
            n += len(encoding.encode(t.description + json.dumps(t.parameters))) + 8
        return n

    # -- the request ------------------------------------------------------------------

    def _new_client(self) -> Any:
        import openai

        o = self.options
        key = o.api_key.reveal() if o.api_key else None
        if key is None and o.is_openai:
            raise MissingKey(
                f"no API key for {o.model_id}: set ${o.api_key_env or 'OPENAI_API_KEY'}"
            )
        return openai.AsyncOpenAI(
            api_key=key or NO_KEY,
            base_url=o.base_url or OPENAI_BASE_URL,
            max_retries=0,
            timeout=openai.Timeout(600.0, connect=o.connect_timeout),
            default_headers=o.headers or None,
        )

    def tool_results(self) -> Literal["native", "user"]:
        """How tool results are sent: configured, else learned, else natively."""
        mode = self.options.tool_results
        if mode != "auto":
            return mode
        return "user" if self._traits.tool_messages is False else "native"

    def params(self, request: ChatRequest, *, stream: bool) -> dict[str, Any]:
        """The ``chat.completions.create`` keyword arguments for ``request``."""
        o = self.options
        params: dict[str, Any] = {
            "model": o.model,
            "messages": to_openai_messages(
                request.messages, tool_results=self.tool_results(), send_reasoning=o.send_reasoning
            ),
            "stream": stream,
        }
        if stream:
            params["stream_options"] = {"include_usage": True}
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in request.tools
            ]
            params["tool_choice"] = _tool_choice(request)
        if request.max_tokens is not None:
            name = o.max_tokens_param or ("max_completion_tokens" if o.is_openai else "max_tokens")
            params[name] = request.max_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if o.extra_body:
            params["extra_body"] = dict(o.extra_body)
        return params

    def _offers_tools(self, request: ChatRequest) -> bool:
        return bool(request.tools) and request.tool_choice != "none"

    def _streams(self, request: ChatRequest) -> bool:
        if not self._offers_tools(request):
            return True
        configured = self.options.stream_tools
        if configured is not None:
            return configured
        return self._traits.stream_tools is not False

    # -- the stream -------------------------------------------------------------------

    def _attempts(self, request: ChatRequest) -> list[tuple[bool, ChatRequest]]:
        """(stream?, request) to try in turn while the answer comes back empty."""
        if not self._offers_tools(request):
            return [(True, request)]
        without_tools = (True, replace(request, tool_choice="none"))
        if self._streams(request) and self.options.stream_tools is None:
            return [(True, request), (False, request), without_tools]
        return [(self._streams(request), request), without_tools]

    async def stream(self, request: ChatRequest) -> AsyncIterator[ProviderEvent]:
        await self._probe_tool_messages(request)
        attempts = self._attempts(request)
        for number, (streams, attempt) in enumerate(attempts):
            answered = False
            held: list[ProviderEvent] = []
            async for event in self._attempt(attempt, stream=streams):
                if isinstance(event, OUTPUT) and not _blank(event):
                    answered = True
                    for earlier in held:
                        yield earlier
                    held.clear()
                    yield event
                elif isinstance(event, Usage | Done) and not answered:
                    held.append(event)  # an empty answer is retried, not reported
                else:
                    yield event
                    if isinstance(event, ProviderError):
                        return
            if answered:
                for event in held:
                    yield event
                if number > 0 and attempts[0][0] and self.options.stream_tools is None:
                    self._learn(stream_tools=False)
                return
            if number + 1 < len(attempts):
                log.info("%s: empty answer (attempt %d); retrying", self.model_id, number + 1)
        tried = ", then ".join(
            ("streamed" if streams else "not streamed")
            + (" without tools" if attempt.tool_choice == "none" and request.tools else "")
            for streams, attempt in attempts
        )
        yield ProviderError(
            "empty_answer",
            f"the server returned an empty answer: no text and no tool call (tried {tried})",
            None,
            False,
        )

    async def _attempt(self, request: ChatRequest, *, stream: bool) -> AsyncIterator[ProviderEvent]:
        if stream:
            assembler: Assembler = StreamAssembler(request, self.count_tokens)

            async def open_stream() -> Any:
                return await self.client().chat.completions.create(
                    **self.params(request, stream=True)
                )
        else:
            assembler = _CompletionAssembler(request, self.count_tokens)

            async def open_stream() -> Any:
                completion = await self.client().chat.completions.create(
                    **self.params(request, stream=False)
                )
                return _single(completion)

        async for event in relay(self.model_id, open_stream, assembler, self._secrets()):
            yield event

    async def _probe_tool_messages(self, request: ChatRequest) -> None:
        """Learn, once, whether the server's chat template keeps ``role: "tool"``
        messages: a long and a short tool result must differ in prompt tokens."""
        if (
            self.options.tool_results != "auto"
            or self.options.is_openai
            or self._traits.tool_messages is not None
            or not any(m.role == "tool" for m in request.messages)
        ):
            return
        async with self._probe_lock:
            if self._traits.tool_messages is not None:
                return
            counts: list[int] = []
            for result in (PROBE_RESULT, "ok"):
                call = ToolCallFinal("call_probe", "probe", {}, "{}")
                messages = [
                    ChatMessage("user", "Run the probe."),
                    ChatMessage("assistant", "", tool_calls=[call]),
                    ChatMessage("tool", result, tool_call_id="call_probe", tool_name="probe"),
                ]
                params: dict[str, Any] = {
                    "model": self.options.model,
                    "messages": to_openai_messages(messages, tool_results="native"),
                    "max_tokens": 1,
                    "stream": False,
                }
                try:
                    with anyio.fail_after(60):
                        reply = await self.client().chat.completions.create(**params)
                except Exception as exc:
                    log.info("%s: tool message probe failed (%s)", self.model_id, exc)
                    return
                usage = getattr(reply, "usage", None)
                tokens = getattr(usage, "prompt_tokens", None) if usage is not None else None
                if not isinstance(tokens, int) or tokens <= 0:
                    return  # no usage reported: cannot tell, keep the standard
                counts.append(tokens)
            self._learn(tool_messages=counts[0] > counts[1] + 5)

    async def _served_models(self, client: Any) -> list[str]:
        page = await client.models.list()
        return [m.id for m in page.data]

    def _listed(self, ids: list[str]) -> str:
        return "model listed" if self.options.model in ids else f"{len(ids)} models served"


async def _single(item: Any) -> AsyncIterator[Any]:
    yield item


def _blank(event: ProviderEvent) -> bool:
    """A text delta with no text (some servers send one before nothing else)."""
    return isinstance(event, TextDelta) and not event.text


class _CompletionAssembler:
    """A whole (non-streamed) completion as one raw chunk."""

    def __init__(self, request: ChatRequest, count_tokens: Callable[[ChatRequest], int]) -> None:
        self._request = request
        self._count = count_tokens

    def feed(self, raw: Any) -> Iterator[ProviderEvent]:
        return iter(events_from_completion(raw, self._request, self._count))

    def finish(self) -> Iterator[ProviderEvent]:
        return iter(())


# -- messages ---------------------------------------------------------------------------


def to_openai_messages(
    messages: list[ChatMessage],
    *,
    tool_results: Literal["native", "user"] = "native",
    send_reasoning: bool = False,
) -> list[dict[str, Any]]:
    """Provider-neutral messages in the chat completions shape."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role in ("system", "user"):
            out.append({"role": m.role, "content": m.content})
        elif m.role == "assistant":
            # "" rather than null beside tool calls: llama-cpp-python rejects null.
            msg: dict[str, Any] = {"role": "assistant", "content": m.content}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": c.raw_arguments or json.dumps(c.arguments),
                        },
                    }
                    for c in m.tool_calls
                ]
            reasoning = "".join(str(t.get("text", "")) for t in m.thoughts if not t.get("redacted"))
            if send_reasoning and reasoning:
                msg["reasoning_content"] = reasoning
            out.append(msg)
        else:
            content = m.content
            if m.is_error and not content.lower().startswith("error"):
                content = f"Error: {content}"
            if tool_results == "user":
                name = m.tool_name or "tool"
                out.append(
                    {
                        "role": "user",
                        "content": f"Result of {name} (call {m.tool_call_id}):\n{content}",
                    }
                )
            else:
                out.append(
                    {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": content}
                )
    return out


def _tool_choice(request: ChatRequest) -> Any:
    choice = str(request.tool_choice)
    if choice in ("auto", "none", "required"):
        return choice
    if any(t.name == choice for t in request.tools):
        return {"type": "function", "function": {"name": choice}}
    return "auto"


# -- responses --------------------------------------------------------------------------


@dataclass(slots=True)
class _CallParts:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamAssembler:
    """Chat completion chunks in, provider events out; tool calls assembled per index."""

    def __init__(self, request: ChatRequest, count_tokens: Any) -> None:
        self._request = request
        self._count_tokens = count_tokens
        self._calls: dict[int, _CallParts] = {}
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._output_chars = 0

    def feed(self, raw: Any) -> Iterator[ProviderEvent]:
        chunk = raw
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._usage = _usage(usage)
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta is not None:
                yield from self._delta(delta)
            if choice.finish_reason:
                self._finish = choice.finish_reason

    def _delta(self, delta: Any) -> Iterator[ProviderEvent]:
        extra: dict[str, Any] = getattr(delta, "model_extra", None) or {}
        reasoning = extra.get("reasoning_content") or extra.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._output_chars += len(reasoning)
            yield ThoughtDelta(reasoning)
        if delta.content:
            self._output_chars += len(delta.content)
            yield TextDelta(delta.content)
        refusal = getattr(delta, "refusal", None)
        if refusal:
            yield TextDelta(refusal)
            self._finish = self._finish or "content_filter"
        for tc in delta.tool_calls or ():
            parts = self._calls.setdefault(tc.index, _CallParts())
            if tc.id and not parts.id:
                parts.id = tc.id
            fn = tc.function
            name = fn.name if fn is not None and fn.name else None
            if name and name != parts.name:
                parts.name += name
            fragment = (fn.arguments if fn is not None else None) or ""
            if fragment:
                parts.arguments.append(fragment)
                self._output_chars += len(fragment)
            yield ToolCallDelta(tc.index, tc.id, name, fragment)

    def finish(self) -> Iterator[ProviderEvent]:
        if self._finish is None:
            yield ProviderError(
                "stream_interrupted",
                "the stream ended before the model finished (no finish reason)",
                None,
                True,
            )
            return
        for index in sorted(self._calls):
            parts = self._calls[index]
            yield _final_call(parts.id, parts.name, "".join(parts.arguments))
        yield self._usage or Usage(
            input_tokens=self._count_tokens(self._request),
            output_tokens=max(1, self._output_chars // 4),
        )
        finish = FINISH_REASONS.get(self._finish, "stop")
        if self._calls and finish == "stop":
            finish = "tool_calls"
        yield Done(finish)


def events_from_completion(
    completion: Any, request: ChatRequest, count_tokens: Any
) -> Iterator[ProviderEvent]:
    """A non-streamed completion as the same events a stream would give."""
    choice = completion.choices[0] if completion.choices else None
    if choice is None:
        yield ProviderError("malformed_response", "the server returned no choices", None, True)
        return
    message = choice.message
    extra: dict[str, Any] = getattr(message, "model_extra", None) or {}
    reasoning = extra.get("reasoning_content") or extra.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        yield ThoughtDelta(reasoning)
    if message.content:
        yield TextDelta(message.content)
    calls = list(message.tool_calls or ())
    for tc in calls:
        fn = getattr(tc, "function", None)
        if fn is not None:
            yield _final_call(tc.id, fn.name, fn.arguments or "")
    usage = getattr(completion, "usage", None)
    yield (
        _usage(usage)
        if usage is not None
        else Usage(count_tokens(request), max(1, len(message.content or "") // 4))
    )
    finish = FINISH_REASONS.get(choice.finish_reason or "stop", "stop")
    yield Done("tool_calls" if calls and finish == "stop" else finish)


def _final_call(call_id: str | None, name: str, raw: str) -> ToolCallFinal:
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        log.info("tool call %s has arguments that are not JSON: %.200r", name, raw)
        parsed = {}
    return ToolCallFinal(
        id=call_id or f"call_{uuid.uuid4().hex[:24]}",
        name=name,
        arguments=parsed if isinstance(parsed, dict) else {},
        raw_arguments=raw,
    )


def _usage(usage: Any) -> Usage:
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return Usage(
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cache_read_tokens=int(cached or 0),
    )


# -- token counting ------------------------------------------------------------------


def _encoding_name(model: str) -> str | None:
    try:
        from tiktoken.model import encoding_name_for_model
    except ImportError:
        return None
    try:
        return encoding_name_for_model(model)
    except KeyError:
        return None


@functools.cache
def _offline_encoding(name: str | None) -> Any:
    """The tiktoken encoding ``name`` if it loads from the local cache, else None.

    tiktoken fetches encoding files over HTTP on first use; while loading here its
    downloader is replaced by one that refuses, so a missing file means the rough
    count instead of a network call.
    """
    if not name:
        return None
    try:
        import tiktoken
        import tiktoken.load as tiktoken_load
    except ImportError:
        return None
    fetch = tiktoken_load.read_file

    def refuse_download(blobpath: str) -> bytes:
        if blobpath.startswith(("http://", "https://")):
            raise OSError(f"not downloading {blobpath}: tiktoken encodings must be cached")
        return fetch(blobpath)

    tiktoken_load.read_file = refuse_download
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:
        log.info("tiktoken encoding %s unavailable offline (%s); using a rough count", name, exc)
        return None
    finally:
        tiktoken_load.read_file = fetch
