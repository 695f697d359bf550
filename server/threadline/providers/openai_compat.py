"""OpenAI-compatible provider: chat completions streamed through the official ``openai`` SDK.

Works with OpenAI itself and with servers that speak the same API (llama.cpp,
llama-cpp-python, vLLM, Ollama, LM Studio, OpenRouter). The SDK is imported on the
first call, never at server start, and its own retries are off: retrying is a policy
(:mod:`.policies`), applied around this provider.

How an answer becomes events is :mod:`.openai_stream`; the request's messages,
:mod:`.openai_messages`; token counting, :mod:`.openai_tokens`.

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
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anyio

from .base import (
    ChatMessage,
    ChatRequest,
    Done,
    ProviderError,
    ProviderEvent,
    ToolCallFinal,
    Usage,
)
from .configured import EndpointOptions, SdkProvider
from .openai_messages import to_openai_messages as to_openai_messages
from .openai_messages import tool_choice
from .openai_stream import CompletionAssembler, answers, single
from .openai_stream import StreamAssembler as StreamAssembler
from .openai_tokens import count_tokens, encoding_name
from .sdk_stream import Assembler, MissingKey, relay
from .traits import ServerTraits, TraitStore, server_key

log = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "sk-no-key-required"
"""Sent to servers that need no key (the SDK refuses an empty one)."""


@dataclass(frozen=True, slots=True)
class OpenAIOptions(EndpointOptions):
    api_key_env: str | None = "OPENAI_API_KEY"
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

    @property
    def is_openai(self) -> bool:
        return self.base_url is None or self.base_url.rstrip("/") == OPENAI_BASE_URL


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
        return count_tokens(request, self.options.tokenizer or encoding_name(self.options.model))

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
            params["tool_choice"] = tool_choice(request)
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
                if answers(event):
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
            assembler = CompletionAssembler(request, self.count_tokens)

            async def open_stream() -> Any:
                completion = await self.client().chat.completions.create(
                    **self.params(request, stream=False)
                )
                return single(completion)

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
