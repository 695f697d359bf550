"""The scripted model's ``mark`` step: a benchmark's start, stamped where it stands."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio

from threadline.providers.base import ChatMessage, ChatRequest, TextDelta, ToolCallFinal
from threadline.providers.scripted import ScriptedProvider


def test_a_mark_stamps_the_wall_clock_when_the_step_is_reached(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    call = {"tool_call": {"name": "delegate", "arguments": {"task": "t"}}}
    script = {"rounds": [[{"text": "a"}, {"mark": str(marks)}, call]]}
    provider = ScriptedProvider(json.dumps(script))
    seen: list[tuple[str, float, int]] = []

    async def run() -> None:
        request = ChatRequest(messages=[ChatMessage("user", "go")])
        async for event in provider.stream(request):
            lines = marks.read_text().splitlines() if marks.exists() else []
            if isinstance(event, TextDelta | ToolCallFinal):
                seen.append((type(event).__name__, time.time(), len(lines)))

    before = time.time()
    anyio.run(run)
    [stamp] = [float(line) for line in marks.read_text().splitlines()]
    # written after the text and before the call was yielded
    assert [(name, n) for name, _, n in seen] == [("TextDelta", 0), ("ToolCallFinal", 1)]
    assert before <= stamp <= seen[1][1]
