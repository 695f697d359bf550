"""Draining a provider's event stream in tests."""

from __future__ import annotations

import anyio

from threadline.providers.base import (
    ChatRequest,
    Provider,
    ProviderError,
    ProviderEvent,
    StatusNotice,
    TextDelta,
)


async def collect(
    provider: Provider, request: ChatRequest, timeout: float = 30
) -> list[ProviderEvent]:
    events: list[ProviderEvent] = []
    with anyio.fail_after(timeout):
        async for event in provider.stream(request):
            events.append(event)
    return events


def text_of(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def errors(events: list[ProviderEvent]) -> list[ProviderError]:
    return [e for e in events if isinstance(e, ProviderError)]


def notices(events: list[ProviderEvent]) -> list[StatusNotice]:
    return [e for e in events if isinstance(e, StatusNotice)]
