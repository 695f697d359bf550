"""The conformance check itself: it must reject what third-party clients reject."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance import Conformance


def update(u: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}}


CHUNK = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}

BAD = {
    "null close result": ("session/close", {"jsonrpc": "2.0", "id": 1, "result": None}),
    "LSP cancel params under ACP's name": (
        None,
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"id": "tl-1"}},
    ),
    "summary as a string": (
        None,
        update(
            {
                "sessionUpdate": "compaction_update",
                "compactionId": "k",
                "status": "completed",
                "summary": "S",
            }
        ),
    ),
    "a tool status ACP lacks": (
        None,
        update({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "cancelled"}),
    ),
    "an unlisted _meta.threadline key": (
        None,
        update({**CHUNK, "_meta": {"threadline": {"turnId": "a1", "ephemeral": True}}}),
    ),
    "a method nobody defines": (None, {"jsonrpc": "2.0", "method": "session/echo", "params": {}}),
    "an error without a message": (None, {"jsonrpc": "2.0", "id": 2, "error": {"code": -32600}}),
    "a prompt result without stopReason": (
        "session/prompt",
        {"jsonrpc": "2.0", "id": 1, "result": {"usage": {}}},
    ),
}

GOOD = {
    "empty close result": ("session/close", {"jsonrpc": "2.0", "id": 1, "result": {}}),
    "ACP cancel": (
        None,
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 3}},
    ),
    "LSP cancel": (None, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "tl-1"}}),
    "chunk with turn id": (None, update({**CHUNK, "_meta": {"threadline": {"turnId": "a1"}}})),
    "chunk with another party's _meta": (None, update({**CHUNK, "_meta": {"zed": {"x": 1}}})),
}


@pytest.mark.parametrize("name", list(BAD))
def test_rejects(name: str) -> None:
    method, message = BAD[name]
    check = Conformance()
    if method is not None:
        check.sent({"id": 1, "method": method})
    assert check.check(message), name


@pytest.mark.parametrize("name", list(GOOD))
def test_accepts(name: str) -> None:
    method, message = GOOD[name]
    check = Conformance()
    if method is not None:
        check.sent({"id": 1, "method": method})
    assert check.check(message) == [], name
