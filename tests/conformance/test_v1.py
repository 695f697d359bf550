"""ACP v1 conformance beside v2: a v1 connection is what it was before v2 came (its
messages checked against ACP's vendored v1 schema and ``protocol/schema.json``, with
no top-level key v1 does not define beyond the ones docs/protocol.md names)."""

from __future__ import annotations

import json
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


PRICED = {"input": 2.0, "output": 10.0}
"""USD per million tokens, as ``[models.X] price`` says it (a scripted model's script
carries it the same way)."""


def priced(price: dict[str, float] | None = PRICED) -> str:
    """A scripted model whose answer takes two calls (a tool call, then the text), the
    first taking 1000 input and 200 output tokens, the second 3000 and 500 (a script's
    rounds start again at each prompt)."""
    look = {"name": "list_directory", "arguments": {"path": "."}}
    rounds = [
        [{"tool_call": look}, {"usage": {"input_tokens": 1000, "output_tokens": 200}}],
        [{"text": "ok"}, {"usage": {"input_tokens": 3000, "output_tokens": 500}}],
    ]
    return scripted(*rounds) if price is None else scripted_with(rounds, price=price)


def scripted_with(rounds: list[list[dict[str, Any]]], **extra: Any) -> str:
    return "scripted:" + json.dumps({"rounds": rounds, **extra})


@pytest.mark.requirement("TL-USAGE-001")
@pytest.mark.parametrize("price", [PRICED, None])
async def test_v1_usage_update_carries_the_sessions_cost(
    agents: Start, tmp_path: Path, price: dict[str, float] | None
) -> None:
    agent = await agents()
    await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    model = priced(price)
    new = {"cwd": str(tmp_path), "mcpServers": [], "_meta": {"threadline": {"model": model}}}
    sid = (await agent.call("session/new", new))["sessionId"]
    for _ in range(2):
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "Hi"}]}
        await agent.call("session/prompt", prompt)
    usages = agent.updates(sid, "usage_update")
    assert len(usages) == 4
    if price is None:
        assert all("cost" not in u for u in usages)
    else:
        # each prompt: 1000×2 + 200×10 = 4000 µ$, then 3000×2 + 500×10 = 11000 µ$
        assert [u["cost"]["amount"] for u in usages] == pytest.approx([0.004, 0.015, 0.019, 0.030])
        assert {u["cost"]["currency"] for u in usages} == {"USD"}
    assert agent.checks.problems == [] and agent.checks.sent_problems == []


@pytest.mark.requirement("TL-V1-KEYS-001")
async def test_v1_results_keep_only_the_named_extra_keys(agents: Start, tmp_path: Path) -> None:
    """The decision of docs/protocol.md ("Top-level keys 1.21 does not define"): these
    stay where Threadline's clients read them; nothing else beyond v1's schema."""
    agent = await agents()
    await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    model = scripted([{"text": "ok"}])
    new = {"cwd": str(tmp_path), "mcpServers": [], "_meta": {"threadline": {"model": model}}}
    created = await agent.call("session/new", new)
    assert set(created) - {"sessionId", "modes", "configOptions", "_meta"} == {"models"}
    assert created["models"]["currentModelId"]
    sid = created["sessionId"]
    answer = await agent.call(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Hi"}]}
    )
    assert set(answer) - {"stopReason", "_meta"} == {"usage"}
    forked = await agent.call("session/fork", {"sessionId": sid, "cwd": str(tmp_path)})
    fork_keys = {"sessionId", "modes", "configOptions", "_meta"}  # 1.21 unstable fork
    assert set(forked) - fork_keys == {"parentSessionId", "forkedAtMessageId"}
    assert forked["parentSessionId"] == sid
    assert agent.checks.problems == [] and agent.checks.sent_problems == []
