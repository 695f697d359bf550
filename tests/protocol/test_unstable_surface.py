"""ACP 1.21 lists ``notice`` and ``compaction_update`` only in its unstable schema: the
sidecar sends them only to a client that opted in to each, by the capability that
names it (``session.notices``, ``session.compaction``). A stable-only client (one
that advertised neither) is sent nothing but 1.21's stable ``SessionUpdate`` kinds,
through a turn with a provider's status notice, a compaction and an option change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import SidecarClient, start_sidecar

pytestmark = pytest.mark.timeout(120)

STABLE_1_21 = {
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
}
"""The ``sessionUpdate`` kinds of ACP 1.21's stable schema (``schema/v1/schema.json``)."""

PAD = " and more words" * 40
SCRIPT = {
    "rounds": [[{"status": "retrying in 1 s (rate limited)"}, {"text": "An answer."}]],
    "summary": [{"text": "Short summary."}],
}


async def kinds_seen(home: Path, capabilities: dict[str, Any]) -> list[dict[str, Any]]:
    client: SidecarClient = await start_sidecar(home, initialize=False)
    try:
        await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
        sid = await client.new_session(model="scripted:" + json.dumps(SCRIPT))
        for n in range(3):
            await client.prompt(sid, f"Question {n}.{PAD}")
        await client.call("session/compact", {"sessionId": sid, "keepTurns": 1})
        await client.call("session/set_mode", {"sessionId": sid, "modeId": "plan"})
        await client.wait_update(
            lambda u: (
                u["sessionId"] == sid and u["update"]["sessionUpdate"] == "config_option_update"
            )
        )
        return [u["update"] for u in client.updates if u["sessionId"] == sid]
    finally:
        await client.stop()


async def test_a_stable_only_client_gets_only_stable_updates(home: Path) -> None:
    seen = await kinds_seen(home, {})
    kinds = {u["sessionUpdate"] for u in seen}
    assert kinds <= STABLE_1_21, kinds - STABLE_1_21
    statuses = [
        u["_meta"]["threadline"]["status"]
        for u in seen
        if u["sessionUpdate"] == "session_info_update"
        and "status" in u.get("_meta", {}).get("threadline", {})
    ]
    assert statuses == ["retrying in 1 s (rate limited)"] * 3, "the notice is still said, in _meta"
    assert {"agent_message_chunk", "config_option_update", "current_mode_update"} <= kinds


async def test_a_client_that_opted_in_gets_notices_and_compactions(home: Path) -> None:
    seen = await kinds_seen(home, {"session": {"notices": {}, "compaction": {}}})
    notices = [u for u in seen if u["sessionUpdate"] == "notice"]
    assert (
        notices
        == [
            {
                "sessionUpdate": "notice",
                "severity": "info",
                "title": "retrying in 1 s (rate limited)",
            }
        ]
        * 3
    )
    compactions = [u["status"] for u in seen if u["sessionUpdate"] == "compaction_update"]
    assert compactions == ["in_progress", "completed"]
    only_compaction = await kinds_seen(home, {"session": {"compaction": {}}})
    assert not [u for u in only_compaction if u["sessionUpdate"] == "notice"]
