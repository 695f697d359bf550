"""The conformance check itself: it must reject what third-party clients reject."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import Conformance
from tests.wirelog import check_exchange, main


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


def test_a_whole_exchange_is_checked_both_ways(tmp_path: Path) -> None:
    """``check_exchange`` (and ``python -m tests.wirelog``, which the ACP SDK tests
    of the TypeScript client run): the client's requests and its answers to the
    agent's requests are checked too, not only what the agent sent."""
    ask = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "fs/read_text_file",
        "params": {"sessionId": "s", "path": "/w/a.txt"},
    }
    good: list[tuple[str, Any]] = [
        ("client", {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}),
        ("agent", ask),
        ("client", {"jsonrpc": "2.0", "id": 7, "result": {"content": "text"}}),
        ("agent", update(CHUNK)),
    ]
    assert check_exchange(good) == []
    bad_answer = [*good[:2], ("client", {"jsonrpc": "2.0", "id": 7, "result": {"text": 1}})]
    assert [p[:50] for p in check_exchange(bad_answer)] == [
        "client: fs/read_text_file result: acp ReadTextFile",
        "client: fs/read_text_file result: threadline ReadT",
    ]
    unknown = [("client", {"jsonrpc": "2.0", "id": 2, "method": "session/nope", "params": {}})]
    assert check_exchange(unknown) == [
        "client: session/nope: a method neither ACP nor Threadline defines"
    ]
    wrong_update = [("agent", update({**CHUNK, "content": "hi"}))]
    assert {p[:7] for p in check_exchange(wrong_update)} == {"agent: "}

    log = tmp_path / "wire.jsonl"
    log.write_text("\n".join(json.dumps({"side": s, "message": m}) for s, m in bad_answer))
    assert main([str(log)]) == 1
    log.write_text("\n".join(json.dumps({"side": s, "message": m}) for s, m in good))
    assert main([str(log)]) == 0
