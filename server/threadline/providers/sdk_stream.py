"""Relay an SDK's stream as provider events, with one failure mapping for every SDK.

Both official SDKs hand back an async iterator of raw chunks that must be closed; each
provider supplies an *assembler* that turns raw chunks into provider events. What a
failure becomes depends on whether output had already streamed (a retry would repeat
it), so the relay tracks that for the policies.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol

import anyio

from .base import ProviderError, ProviderEvent
from .policies.failures import OUTPUT_EVENTS, failure_from_exception

log = logging.getLogger(__name__)


class Assembler(Protocol):
    def feed(self, raw: Any) -> Iterable[ProviderEvent]: ...

    def finish(self) -> Iterable[ProviderEvent]: ...


class MissingKey(Exception):
    """No API key for a provider that needs one: fails the call, never retried."""


async def relay(
    model_id: str,
    open_stream: Callable[[], Awaitable[Any]],
    assembler: Assembler,
    secrets: Sequence[str],
) -> AsyncIterator[ProviderEvent]:
    """Open the SDK stream, feed every chunk to ``assembler``, always close the stream."""
    streamed = False
    try:
        chunks = await open_stream()
        try:
            async for raw in chunks:
                for event in assembler.feed(raw):
                    streamed = streamed or isinstance(event, OUTPUT_EVENTS)
                    yield event
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                with anyio.move_on_after(2, shield=True):
                    await close()
        for event in assembler.finish():
            yield event
    except MissingKey as exc:
        yield ProviderError("auth_error", str(exc), None, False)
    except Exception as exc:
        failure = failure_from_exception(exc, streamed=streamed, secrets=list(secrets))
        log.info("%s failed: %s: %s", model_id, failure.reason, failure.message)
        yield failure
