"""The agent delegates: ``delegate`` calls run child sessions (scripted models, real
sidecars over the wire)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support import SidecarClient, start_sidecar


def model(*rounds: list[dict[str, Any]], **script: Any) -> str:
    return "scripted:" + json.dumps({"rounds": list(rounds), **script})


def delegate(task: str, child: str, **more: Any) -> dict[str, Any]:
    return {"tool_call": {"name": "delegate", "arguments": {"task": task, "model": child, **more}}}


def requests(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rows(home: Path) -> list[dict[str, Any]]:
    db = sqlite3.connect(home / "threadline.db")
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute("SELECT * FROM sessions")]
    finally:
        db.close()


async def history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


async def listed(client: SidecarClient) -> dict[str, dict[str, Any]]:
    return {s["sessionId"]: s for s in (await client.call("session/list", {}))["sessions"]}


def results(messages: list[dict[str, Any]], name: str = "delegate") -> list[dict[str, Any]]:
    return [
        b
        for m in messages
        if m["role"] == "tool"
        for b in m["content"]
        if b.get("type") == "tool_result" and b.get("toolName") == name
    ]


def result_text(block: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in block["content"])


def call_updates(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return [
        u["update"]
        for u in client.updates
        if u["sessionId"] == sid and u["update"]["sessionUpdate"] == "tool_call_update"
    ]


async def until(check: Callable[[], Any], timeout: float = 30) -> Any:
    async with asyncio.timeout(timeout):
        while not (got := check()):
            await asyncio.sleep(0.02)
        return got


def child_of(client: SidecarClient, sid: str) -> str | None:
    for u in call_updates(client, sid):
        child = (u.get("_meta") or {}).get("threadline", {}).get("childSessionId")
        if child:
            return str(child)
    return None


async def test_a_fork_child_sees_the_parent_and_costs_one_row(
    sidecar: SidecarClient, home: Path, tmp_path: Path
) -> None:
    record = tmp_path / "child.jsonl"
    child_model = model([{"text": "the child found 3 files"}], record=str(record))
    sid = await sidecar.new_session(model=model([{"text": "earlier answer"}]))
    await sidecar.prompt(sid, "first question about apples")
    before = rows(home)
    # Then a model whose first round delegates.
    await sidecar.call(
        "session/set_config_option",
        {
            "sessionId": sid,
            "configId": "model",
            "value": model(
                [delegate("count the files", child_model, context="fork")],
                [{"text": "parent done"}],
            ),
        },
    )
    result = await sidecar.prompt(sid, "now delegate")
    assert result["stopReason"] == "end_turn"
    after = rows(home)
    assert len(after) == len(before) + 1
    (child_row,) = [r for r in after if r["id"] not in {b["id"] for b in before}]
    assert child_row["base_id"] == sid and child_row["parent_id"] == sid
    # The child's first model request holds the parent's conversation, then the task.
    first = requests(record)[0]["messages"]
    said = [m["content"] for m in first]
    assert any("first question about apples" in c for c in said)
    assert any("earlier answer" in c for c in said)
    assert first[-1] == {"role": "user", "content": "count the files"}
    # The parent's call result is the child's answer, naming the child.
    (block,) = results(await history(sidecar, sid))
    assert "the child found 3 files" in result_text(block)
    assert block["childSessionId"] == child_row["id"]
    assert child_of(sidecar, sid) == child_row["id"]
    # Listed as a child of the parent; loadable; its own history has the task and answer.
    entry = (await listed(sidecar))[child_row["id"]]
    assert entry["_meta"]["parentSessionId"] == sid
    assert entry["_meta"]["kind"] == "child"
    assert (await listed(sidecar))[sid]["_meta"]["kind"] == "session"
    child_history = await history(sidecar, child_row["id"])
    assert child_history[-1]["content"][0]["text"] == "the child found 3 files"
    # Parent usage counts the child's model call; its context does not hold it.
    usage = result["usage"]
    assert usage["outputTokens"] >= 2


async def test_a_fresh_child_sees_only_the_task(sidecar: SidecarClient, tmp_path: Path) -> None:
    record = tmp_path / "child.jsonl"
    child_model = model([{"text": "done fresh"}], record=str(record))
    sid = await sidecar.new_session(
        model=model([delegate("summarise README", child_model)], [{"text": "ok"}])
    )
    await sidecar.prompt(sid, "a secret word: pelican")
    first = requests(record)[0]["messages"]
    users = [m for m in first if m["role"] != "system"]
    assert users == [{"role": "user", "content": "summarise README"}]
    assert not any("pelican" in m["content"] for m in first)
    (block,) = results(await history(sidecar, sid))
    assert "done fresh" in result_text(block)
    child = block["childSessionId"]
    entry = (await listed(sidecar))[child]
    assert entry["_meta"]["parentSessionId"] == sid
    assert entry["_meta"]["kind"] == "child"
    # A child is forkable like any session.
    forked = await sidecar.call("session/fork", {"sessionId": child})
    assert forked["parentSessionId"] == child
