"""A server→client request that is no longer wanted is withdrawn in the client's form.

After ``session/cancel`` with a permission request pending, an ACP client (one JSON
object per line) gets ``$/cancel_request {requestId}`` and an LSP client
(``Content-Length``) ``$/cancelRequest {id}``; ``initialize`` may name the form
instead. Both framings run the whole flow, and every message is checked against
ACP's schema (``tests/protocol/conftest.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import RawSidecar, scripted

GUARDED = scripted(
    [{"text": "Deploying."}, {"tool_call": {"name": "deploy", "arguments": {"to": "prod"}}}],
    [{"text": "Not deployed."}],
)
DEPLOY = {"name": "deploy", "description": "Deploy the app", "needsApproval": True}


async def until(raw: RawSidecar, pred: Any) -> dict[str, Any]:
    while True:
        msg = await raw.read(30)
        if pred(msg):
            return msg


@pytest.mark.parametrize(
    ("framing", "named", "expected"),
    [
        ("lines", None, ("$/cancel_request", "requestId")),
        ("headers", None, ("$/cancelRequest", "id")),
        ("lines", "$/cancelRequest", ("$/cancelRequest", "id")),
        ("headers", "$/cancel_request", ("$/cancel_request", "requestId")),
    ],
)
async def test_cancel_withdraws_the_pending_permission_request(
    raw: RawSidecar, framing: str, named: str | None, expected: tuple[str, str]
) -> None:
    caps: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}}
    if named is not None:
        caps["_meta"] = {"threadline": {"cancelMethod": named}}
    await raw.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": caps},
        },
        framing,
    )
    assert "result" in await raw.response(1)
    await raw.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {
                "cwd": "/tmp",
                "mcpServers": [],
                "_meta": {
                    "threadline": {"model": GUARDED, "tools": [DEPLOY], "builtinTools": False}
                },
            },
        },
        framing,
    )
    sid = (await raw.response(2))["result"]["sessionId"]
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "deploy"}]}
    await raw.send(
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt}, framing
    )
    asked = await until(raw, lambda m: m.get("method") == "session/request_permission")
    assert asked["params"]["toolCall"]["title"] == "deploy"

    await raw.send(
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}, framing
    )
    method, key = expected
    withdrawn = await until(raw, lambda m: str(m.get("method", "")).startswith("$/"))
    assert withdrawn["method"] == method
    assert withdrawn["params"] == {key: asked["id"]}
    assert (await raw.response(3))["result"]["stopReason"] == "cancelled"
    assert raw.framing == framing

    await raw.send(
        {"jsonrpc": "2.0", "id": 4, "method": "session/close", "params": {"sessionId": sid}},
        framing,
    )
    assert (await raw.response(4))["result"] == {}
