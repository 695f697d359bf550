"""Anthropic provider: the Messages API streamed through the official ``anthropic`` SDK.

Handles text, tool use (``input_json_delta`` fragments assembled per block), extended
thinking and redacted thinking, and records prompt-cache reads and writes.

Thinking blocks must go back to the API exactly as they came, signature included,
or the next request of a tool loop is rejected. So each block is kept verbatim:

* a thinking block starts a new stored thought (a ``ThoughtDelta`` whose ``extra``
  is ``{"provider": "anthropic"}``); its ``thinking_delta`` texts are appended to it
  unchanged, and when the block stops one ``ThoughtDelta`` carries its whole
  signature (the ``signature_delta`` parts joined);
* a redacted block is stored as ``{"provider": "anthropic", "redacted": True,
  "data": <opaque>}``.

On later turns the compiler hands those dicts back in ``ChatMessage.thoughts`` and
:func:`to_anthropic_messages` rebuilds ``{"type": "thinking", "thinking", "signature"}``
or ``{"type": "redacted_thinking", "data"}`` from them, first in the assistant message
as the API requires. Thoughts from other providers (no ``provider: anthropic`` marker,
no signature) are not sent: the API would reject them.

Usage: ``input_tokens`` is the whole prompt (uncached + cache read + cache write) so
that it means the same as for other providers; the cache parts are reported too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from .base import (
    ChatMessage,
    ChatRequest,
    Done,
    FinishReason,
    ImagePart,
    ProviderError,
    ProviderEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallDelta,
    ToolCallFinal,
    Usage,
    rough_token_count,
    system_first,
)
from .configured import EndpointOptions, SdkProvider
from .sdk_stream import MissingKey, relay

log = logging.getLogger(__name__)

PROVIDER_MARK = "anthropic"
DEFAULT_MAX_TOKENS = 4096

STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
}


@dataclass(frozen=True, slots=True)
class AnthropicOptions(EndpointOptions):
    api_key_env: str | None = "ANTHROPIC_API_KEY"
    context_window: int = 200_000
    max_tokens: int = DEFAULT_MAX_TOKENS
    thinking_budget: int | None = None
    prompt_cache: bool = True


class AnthropicProvider(SdkProvider[AnthropicOptions]):
    def count_tokens(self, request: ChatRequest) -> int:
        # The exact count is an API call (messages.count_tokens); callers of this
        # method need a cheap, synchronous estimate.
        return rough_token_count(request)

    def _new_client(self) -> Any:
        o = self.options
        if not o.api_key:
            raise MissingKey(
                f"no API key for {o.model_id}: set ${o.api_key_env or 'ANTHROPIC_API_KEY'}"
            )
        import anthropic

        return anthropic.AsyncAnthropic(
            api_key=o.api_key.reveal(),
            base_url=o.base_url,
            max_retries=0,
            timeout=anthropic.Timeout(600.0, connect=o.connect_timeout),
            default_headers=o.headers or None,
        )

    def params(self, request: ChatRequest) -> dict[str, Any]:
        """The ``messages.create`` keyword arguments for ``request``."""
        o = self.options
        system, messages = to_anthropic_messages(request.messages)
        max_tokens = request.max_tokens or o.max_tokens
        params: dict[str, Any] = {"model": o.model, "messages": messages, "stream": True}
        if o.thinking_budget:
            if max_tokens <= o.thinking_budget:
                max_tokens += o.thinking_budget
            params["thinking"] = {"type": "enabled", "budget_tokens": o.thinking_budget}
        elif request.temperature is not None:
            params["temperature"] = request.temperature  # thinking allows only the default
        params["max_tokens"] = max_tokens
        if system:
            block: dict[str, Any] = {"type": "text", "text": system}
            if o.prompt_cache:
                block["cache_control"] = {"type": "ephemeral"}
            params["system"] = [block]
        if o.prompt_cache and messages:
            # Mark the end of the conversation so the next request reads it from cache.
            last = messages[-1]["content"][-1]
            if last.get("type") in ("text", "tool_result", "image"):
                last["cache_control"] = {"type": "ephemeral"}
        if request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
            params["tool_choice"] = _tool_choice(request, thinking=bool(o.thinking_budget))
        return params

    async def stream(self, request: ChatRequest) -> AsyncIterator[ProviderEvent]:
        async def open_stream() -> Any:
            return await self.client().messages.create(**self.params(request))

        async for event in relay(self.model_id, open_stream, EventAssembler(), self._secrets()):
            yield event

    async def _served_models(self, client: Any) -> list[str]:
        page = await client.models.list(limit=100)
        return [m.id for m in page.data]

    def _listed(self, ids: list[str]) -> str:
        return "model listed" if self.options.model in ids else "API answered"


def _tool_choice(request: ChatRequest, *, thinking: bool) -> dict[str, Any]:
    choice = str(request.tool_choice)
    if choice == "none":
        return {"type": "none"}
    if thinking:
        return {"type": "auto"}  # thinking allows only auto or none
    if choice == "required":
        return {"type": "any"}
    if any(t.name == choice for t in request.tools):
        return {"type": "tool", "name": choice}
    return {"type": "auto"}


# -- messages ---------------------------------------------------------------------------


def thought_block(thought: dict[str, Any]) -> dict[str, Any] | None:
    """The API block for a stored thought, or None if it cannot be sent back."""
    if thought.get("provider") != PROVIDER_MARK:
        return None
    if thought.get("redacted"):
        data = thought.get("data")
        return {"type": "redacted_thinking", "data": data} if isinstance(data, str) else None
    signature = thought.get("signature")
    if not isinstance(signature, str) or not signature:
        return None
    return {"type": "thinking", "thinking": str(thought.get("text", "")), "signature": signature}


def image_blocks(images: list[ImagePart]) -> list[dict[str, Any]]:
    """Images as the Messages API's base64 ``image`` blocks."""
    return [
        {"type": "image", "source": {"type": "base64", "media_type": i.mime_type, "data": i.data}}
        for i in images
    ]


def to_anthropic_messages(messages: list[ChatMessage]) -> tuple[str, list[dict[str, Any]]]:
    """The system text and the alternating user/assistant messages of a request."""
    messages = system_first(messages)
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for i, m in enumerate(messages):
        if m.role == "system":
            if not out and all(p.role == "system" for p in messages[:i]):
                system.append(m.content)
            elif m.content:
                add("user", [{"type": "text", "text": m.content}])
        elif m.role == "user":
            blocks = image_blocks(m.images)
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            add("user", blocks)
        elif m.role == "assistant":
            blocks = [b for b in (thought_block(t) for t in m.thoughts) if b is not None]
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in m.tool_calls
            ]
            add("assistant", blocks)
        else:
            content: str | list[dict[str, Any]] = m.content or "(no output)"
            if m.images:  # a result's images stand in it, after its text
                text = [{"type": "text", "text": m.content}] if m.content else []
                content = text + image_blocks(m.images)
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id or "",
                "content": content,
            }
            if m.is_error:
                result["is_error"] = True
            add("user", [result])
    return "\n\n".join(s for s in system if s), out


# -- the stream ---------------------------------------------------------------------------


@dataclass(slots=True)
class _ToolBlock:
    id: str
    name: str
    parts: list[str] = field(default_factory=list)


def _merged_usage(known: Usage, reported: Any) -> Usage:
    """``known`` updated with an SDK usage object. The API reports the prompt in three
    parts (uncached, cache read, cache write), in ``message_start`` and again, partly,
    in ``message_delta``: a part it leaves out keeps its earlier count."""

    def part(name: str, before: int) -> int:
        value = getattr(reported, name, None)
        return value if isinstance(value, int) else before

    read = part("cache_read_input_tokens", known.cache_read_tokens)
    write = part("cache_creation_input_tokens", known.cache_write_tokens)
    uncached = part(
        "input_tokens", known.input_tokens - known.cache_read_tokens - known.cache_write_tokens
    )
    return Usage(uncached + read + write, part("output_tokens", known.output_tokens), read, write)


class EventAssembler:
    """Raw Messages stream events in, provider events out."""

    def __init__(self) -> None:
        self._tools: dict[int, _ToolBlock] = {}
        self._signatures: dict[int, list[str]] = {}
        self._usage = Usage()
        self._stop: str | None = None
        self._stopped = False

    def feed(self, raw: Any) -> Iterator[ProviderEvent]:
        event = raw
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self._usage = _merged_usage(self._usage, event.message.usage)
        elif kind == "content_block_start":
            yield from self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            yield from self._delta(event.index, event.delta)
        elif kind == "content_block_stop":
            block = self._tools.pop(event.index, None)
            if block is not None:
                yield _final_call(block)
            signature = "".join(self._signatures.pop(event.index, ()))
            if signature:
                yield ThoughtDelta("", signature)
        elif kind == "message_delta":
            self._stop = event.delta.stop_reason or self._stop
            self._usage = _merged_usage(self._usage, event.usage)
        elif kind == "message_stop":
            self._stopped = True

    def _start(self, index: int, block: Any) -> Iterator[ProviderEvent]:
        kind = block.type
        if kind == "text" and block.text:
            yield TextDelta(block.text)
        elif kind == "thinking":
            self._signatures[index] = [block.signature] if block.signature else []
            yield ThoughtDelta(block.thinking or "", None, {"provider": PROVIDER_MARK})
        elif kind == "redacted_thinking":
            extra = {"provider": PROVIDER_MARK, "redacted": True, "data": block.data}
            yield ThoughtDelta("", None, extra)
        elif kind == "tool_use":
            self._tools[index] = _ToolBlock(block.id, block.name)
            yield ToolCallDelta(index, block.id, block.name)

    def _delta(self, index: int, delta: Any) -> Iterator[ProviderEvent]:
        kind = delta.type
        if kind == "text_delta":
            yield TextDelta(delta.text)
        elif kind == "thinking_delta":
            yield ThoughtDelta(delta.thinking)
        elif kind == "signature_delta":
            # Kept until the block stops: one ThoughtDelta carries the whole signature,
            # so a signature sent in several deltas still lands on its own block.
            self._signatures.setdefault(index, []).append(delta.signature)
        elif kind == "input_json_delta":
            block = self._tools.get(index)
            if block is not None and delta.partial_json:
                block.parts.append(delta.partial_json)
                yield ToolCallDelta(index, arguments_fragment=delta.partial_json)

    def finish(self) -> Iterator[ProviderEvent]:
        if not self._stopped:
            yield ProviderError(
                "stream_interrupted",
                "the stream ended before message_stop",
                None,
                True,
            )
            return
        yield self._usage
        yield Done(STOP_REASONS.get(self._stop or "end_turn", "stop"))


def _final_call(block: _ToolBlock) -> ToolCallFinal:
    raw = "".join(block.parts)
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        log.info("tool_use %s has input that is not JSON: %.200r", block.name, raw)
        parsed = {}
    return ToolCallFinal(
        block.id, block.name, parsed if isinstance(parsed, dict) else {}, raw or "{}"
    )
