"""``threadline serve`` whose scripted text deltas carry the moment the provider made them.

For the added-latency figure only. The scripted provider's ``stream`` is wrapped so
each ``TextDelta`` text becomes ``<perf_counter_ns>;`` as it leaves the provider; the
bench client subtracts that from the moment it parses the notification carrying it
(both read ``CLOCK_MONOTONIC``). Everything after the provider (the turn loop, the
journal, coalescing, the outbox, the pipe) is the unchanged server.

Run: ``python bench/peers/threadline_stamped.py`` (same environment as ``threadline serve``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from threadline.providers import scripted
from threadline.providers.base import ChatRequest, ProviderEvent, TextDelta
from threadline.rpc.boot import serve

_original = scripted.ScriptedProvider.stream


async def _stamped(
    self: scripted.ScriptedProvider, request: ChatRequest
) -> AsyncIterator[ProviderEvent]:
    clock = time.perf_counter_ns
    async for event in _original(self, request):
        yield TextDelta(f"{clock()};") if isinstance(event, TextDelta) else event


scripted.ScriptedProvider.stream = _stamped  # type: ignore[method-assign]

if __name__ == "__main__":
    raise SystemExit(serve())
