"""Chat completion answers (streamed chunks or one whole completion) as provider events.

Text deltas become ``TextDelta``; ``reasoning_content`` (llama.cpp, DeepSeek, vLLM) or
``reasoning`` (OpenRouter, Ollama) deltas become ``ThoughtDelta``; tool-call fragments
are shown as ``ToolCallDelta`` and assembled, per index, into one ``ToolCallFinal`` each
when the stream ends (some servers repeat the name and id on every fragment, so a
repeated name is not appended). A stream that ends without a finish reason was cut
off: that is a ``ProviderError`` (``stream_interrupted``), never a silent success.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .base import (
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
)

log = logging.getLogger(__name__)

FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "refusal",
}


OUTPUT = (TextDelta, ThoughtDelta, ToolCallDelta, ToolCallFinal)
"""Events that make an answer non-empty."""


def answers(event: ProviderEvent) -> bool:
    """Whether ``event`` makes an answer non-empty: a text delta with no text does not
    (some servers send one before nothing else)."""
    return isinstance(event, OUTPUT) and not (isinstance(event, TextDelta) and not event.text)


async def single(item: Any) -> AsyncIterator[Any]:
    """One item as an async stream (a whole completion in place of chunks)."""
    yield item


class CompletionAssembler:
    """A whole (non-streamed) completion as one raw chunk."""

    def __init__(self, request: ChatRequest, count_tokens: Callable[[ChatRequest], int]) -> None:
        self._request = request
        self._count = count_tokens

    def feed(self, raw: Any) -> Iterator[ProviderEvent]:
        return iter(events_from_completion(raw, self._request, self._count))

    def finish(self) -> Iterator[ProviderEvent]:
        return iter(())


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
