"""The slice of Threadline's scripted-model language that the peer servers understand.

A peer reads the same ``_meta.threadline.model`` string (``scripted:<json>``) that
Threadline's scripted provider reads, so the bench sends every server identical
requests. Only ``text``, ``repeat`` and ``sleep`` steps of the first round are
supported: enough for streaming and latency figures.

With ``stamp`` set, each delta's text is replaced by ``<perf_counter_ns>;``: the
moment the delta was produced, which the bench client compares with the moment it
received it (both processes read the same ``CLOCK_MONOTONIC``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any


def steps_of(model: str | None) -> list[dict[str, Any]]:
    """The first round of a ``scripted:<json>`` model string (``[]`` for anything else)."""
    if not model or not model.startswith("scripted:"):
        return []
    spec = model.partition(":")[2]
    if not spec.lstrip().startswith("{"):
        return []
    rounds = json.loads(spec).get("rounds") or [[]]
    return list(rounds[0])


async def deltas(steps: list[dict[str, Any]], stamp: bool = False) -> AsyncIterator[str]:
    """The text deltas the steps produce, in order, sleeping where a step says so."""
    clock = time.perf_counter_ns
    for step in steps:
        if "text" in step:
            yield f"{clock()};" if stamp else str(step["text"])
        elif "repeat" in step:
            text = str(step["repeat"]["text"])
            for _ in range(int(step["repeat"]["count"])):
                yield f"{clock()};" if stamp else text
        elif "sleep" in step:
            await asyncio.sleep(float(step["sleep"]))
