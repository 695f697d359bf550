"""ACP v1 conformance beside v2: a v1 connection is what it was before v2 came (its
messages checked against ACP's vendored v1 schema and ``protocol/schema.json``, with
no top-level key v1 does not define beyond the ones docs/protocol.md names)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.wire import scripted
from threadline_protocol.acp_v2 import UPDATE_KINDS

Start = Callable[[], Any]

pytestmark = pytest.mark.timeout(90)

V2_ONLY = set(UPDATE_KINDS) - {
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "available_commands_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
}


@pytest.mark.requirement("TL-V1-INIT-001")
async def test_initialize_v1_is_unchanged(agents: Start) -> None:
    agent = await agents()
    result = await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert result["protocolVersion"] == 1
    assert result["agentCapabilities"]["loadSession"] is True
    assert result["agentInfo"]["name"] == "threadline"
    assert "info" not in result and "capabilities" not in result


@pytest.mark.requirement("TL-V2-BATCH-001")
async def test_a_batch_on_v1_is_one_error(agents: Start) -> None:
    agent = await agents()
    await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    await agent.batch([{"jsonrpc": "2.0", "id": 7, "method": "session/list", "params": {}}])
    error = await agent.wait_for(lambda m: [x for x in m if "error" in x])
    assert error[0]["id"] is None and error[0]["error"]["code"] == -32600
    assert agent.arrays == []


@pytest.mark.requirement("TL-V1-PROMPT-001")
@pytest.mark.requirement("TL-SCHEMA-001")
@pytest.mark.requirement("TL-SCHEMA-002")
async def test_a_v1_turn_ends_with_its_answer(agents: Start, tmp_path: Path) -> None:
    agent = await agents()
    await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    model = scripted([{"text": "Plain "}, {"text": "answer."}])
    new = {"cwd": str(tmp_path), "mcpServers": [], "_meta": {"threadline": {"model": model}}}
    sid = (await agent.call("session/new", new))["sessionId"]
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "Hi"}]}
    result = await agent.call("session/prompt", prompt)
    assert result["stopReason"] == "end_turn"
    kinds = {u["sessionUpdate"] for u in agent.updates(sid)}
    assert "agent_message_chunk" in kinds and not kinds & V2_ONLY
    assert not any("_threadline" in (u.get("_meta") or {}) for u in agent.updates(sid))
    assert agent.checks.problems == [] and agent.checks.sent_problems == []
