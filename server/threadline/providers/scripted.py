"""Scripted provider: replays a fixed event script. For tests and benchmarks only.

A script is JSON: ``{"rounds": [[step, ...], ...]}``. Round *n* answers the *n*-th
model call of a turn (the last round repeats), so every turn replays the same
script deterministically. Steps::

    {"text": "Hello"}                          a text delta
    {"repeat": {"text": "tok ", "count": N}}   N text deltas
    {"thought": "...", "signature": "sig"}     a thought delta
    {"tool_call": {"name": "n", "arguments": {...}, "id": "optional"}}
    {"usage": {"input_tokens": 1, "output_tokens": 2}}
    {"sleep": 0.05}                            wait (cancellable)
    {"hang": true}                             wait until cancelled
    {"error": {"reason": "...", "message": "...", "retryable": false}}
    {"echo": true}                             repeat the last user message as text
    {"status": "loading the model"}            a wait announced to the client
    {"mark": "<file>"}                         append the wall clock to that file (when
                                               the step is reached: a benchmark's start)

``"images": true`` marks the model as one that sees images (text-only otherwise;
``"toolResultImages": true``: in tool results too); a recorded message's images are
listed under ``images``. A ``"summary": [step, ...]`` key answers compaction requests
instead of the rounds.
``"context_window": N`` sets the context window (default 8192), for sessions far
longer than a small model holds. ``"record": "<file>"`` appends each request it is
sent to that file as one JSON line
(``{"t", "purpose", "messages": [{"role", "content"}]}``, ``t`` the wall clock), so
a test can see what the model was given and when. ``"steered": true`` counts rounds
through a user message that follows a tool result (a prompt that steered the turn)
instead of restarting.

The model string is ``scripted:<path to a script file>`` or ``scripted:echo``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.lowlevel

from .base import (
    ChatMessage,
    ChatRequest,
    Done,
    FinishReason,
    ProviderError,
    ProviderEvent,
    StatusNotice,
    TextDelta,
    ThoughtDelta,
    ToolCallFinal,
    Usage,
    rough_token_count,
    system_first,
)

ECHO_SCRIPT: dict[str, Any] = {"rounds": [[{"echo": True}]]}


def load_script(spec: str) -> dict[str, Any]:
    if spec in ("", "echo"):
        return ECHO_SCRIPT
    if spec.lstrip().startswith("{"):
        return json.loads(spec)
    return json.loads(Path(spec).read_text())


def _round_index(request: ChatRequest, steered: bool = False) -> int:
    """How many model calls this turn has made: assistant messages after the last user
    one (``steered``: after the last user message that does not follow a tool result)."""
    n = 0
    messages = request.messages
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        steer = steered and i > 0 and messages[i - 1].role == "tool"
        if m.role == "user" and not m.ephemeral and not steer:
            break
        if m.role == "assistant":
            n += 1
    return n


def _recorded(m: ChatMessage) -> dict[str, Any]:
    """A message as the record shows it; its images by type, size, cost and bytes."""
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.images:
        out["images"] = [
            {
                "mimeType": i.mime_type,
                "width": i.width,
                "height": i.height,
                "tokens": i.tokens,
                "data": i.data,
            }
            for i in m.images
        ]
    return out


def _record(path: str, request: ChatRequest) -> None:
    line = {
        "t": time.time(),
        "purpose": request.purpose,
        "messages": [_recorded(m) for m in request.messages],
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def _mark(path: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{time.time()!r}\n")


class ScriptedProvider:
    def __init__(self, spec: str, context_window: int = 8192) -> None:
        self._spec = spec
        self._script = load_script(spec)
        self._context_window = int(self._script.get("context_window") or context_window)
        self._calls = 0

    @property
    def model_id(self) -> str:
        return f"scripted:{self._spec}" if len(self._spec) < 200 else "scripted:inline"

    @property
    def context_window(self) -> int:
        return self._context_window

    @property
    def calls(self) -> int:
        return self._calls

    def count_tokens(self, request: ChatRequest) -> int:
        return rough_token_count(replace(request, messages=system_first(request.messages)))

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ChatRequest) -> AsyncIterator[ProviderEvent]:
        # Sent as an API is: system text first (as the OpenAI-compatible and Anthropic
        # providers send it), so scripts and recordings see what those models see.
        request = replace(request, messages=system_first(request.messages))
        self._calls += 1
        if self._script.get("record"):
            _record(str(self._script["record"]), request)
        rounds: list[list[dict[str, Any]]] = self._script.get("rounds") or [[]]
        steps: list[dict[str, Any]]
        if request.purpose == "compaction":
            steps = self._script.get("summary") or [{"text": "Summary of the conversation."}]
        else:
            index = _round_index(request, bool(self._script.get("steered")))
            steps = rounds[min(index, len(rounds) - 1)]
        finish: FinishReason = "stop"
        produced = 0
        for i, step in enumerate(steps):
            if "text" in step:
                produced += 1
                yield TextDelta(step["text"])
            elif "repeat" in step:
                rep = step["repeat"]
                text = rep["text"]
                delta = TextDelta(text)
                every = int(rep.get("yield_every", 0))
                for j in range(int(rep["count"])):
                    yield delta
                    if every and j % every == every - 1:
                        await anyio.lowlevel.checkpoint()
                produced += int(rep["count"])
            elif "thought" in step:
                yield ThoughtDelta(step["thought"], step.get("signature"), step.get("extra"))
            elif "tool_call" in step:
                call = step["tool_call"]
                args = call.get("arguments", {})
                yield ToolCallFinal(
                    id=call.get("id") or f"call_{self._calls}_{i}",
                    name=call["name"],
                    arguments=args if isinstance(args, dict) else {},
                    raw_arguments=json.dumps(args),
                )
                finish = "tool_calls"
            elif "usage" in step:
                yield Usage(**step["usage"])
            elif "sleep" in step:
                await anyio.sleep(float(step["sleep"]))
            elif "hang" in step:
                await anyio.sleep_forever()
            elif "error" in step:
                err = step["error"]
                yield ProviderError(
                    reason=err.get("reason", "scripted_error"),
                    message=err.get("message", "scripted failure"),
                    status=err.get("status"),
                    retryable=bool(err.get("retryable", False)),
                )
                return
            elif "echo" in step:
                last = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
                for word in last.split(" "):
                    produced += 1
                    yield TextDelta(word + " ")
            elif "status" in step:
                yield StatusNotice(str(step["status"]))
            elif "mark" in step:
                _mark(str(step["mark"]))
            elif "finish" in step:
                finish = cast(FinishReason, step["finish"])
        if not any("usage" in s for s in steps):
            yield Usage(input_tokens=rough_token_count(request), output_tokens=produced)
        yield Done(finish)
