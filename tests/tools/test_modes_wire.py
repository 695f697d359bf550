"""Modes and lasting approvals over the wire, with real ``threadline serve`` processes
and the scripted model: what each mode offers and refuses, how it is switched, stored,
kept across a restart and inherited by a fork; "always" answers kept as rules, listed,
removed, and never wider than what the user was shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support import SidecarClient, scripted, start_sidecar
from tests.tools.test_work_wire import allow, blocks, call, history, updates_of
from threadline.tools.commands import confine

pytestmark = pytest.mark.timeout(120)

EDIT = call("edit_file", path="a.txt", edits=[{"oldText": "old", "newText": "new"}])


def results(messages: list[dict[str, Any]]) -> list[str]:
    return [b["content"][0]["text"] for b in blocks(messages, "tool_result")]


async def test_ask_mode_offers_no_edit_and_refuses_one_it_is_sent(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    asked = allow(sidecar)
    params = {
        "cwd": str(tmp_path),
        "mcpServers": [],
        "_meta": {"threadline": {"model": scripted([EDIT], [{"text": "ok"}]), "mode": "ask"}},
    }
    created = await sidecar.call("session/new", params)
    sid = created["sessionId"]
    assert created["modes"]["currentModeId"] == "ask"
    assert [m["id"] for m in created["modes"]["availableModes"]] == ["ask", "plan", "code", "auto"]
    mode_option = [o for o in created["configOptions"] if o["id"] == "mode"]
    assert mode_option[0]["category"] == "mode" and mode_option[0]["currentValue"] == "ask"
    result = await sidecar.prompt(sid, "change old to new in a.txt")
    offered = result["_meta"]["threadline"]["toolOffers"][0]["offered"]
    assert "read_file" in offered
    assert not {"edit_file", "run_command", "update_plan", "write_file"} & set(offered)
    assert (tmp_path / "a.txt").read_text() == "old\n"
    assert asked == []  # refused outright: the user is not even asked
    text = results(await history(sidecar, sid))[0]
    assert "edit_file is not available in ask mode" in text


async def test_switching_modes_is_stored_announced_kept_and_forked(
    sidecar: SidecarClient, home: Path, tmp_path: Path
) -> None:
    sid = await sidecar.new_session(cwd=str(tmp_path), model=scripted([{"text": "hi"}]))
    await sidecar.call("session/set_mode", {"sessionId": sid, "modeId": "plan"})
    assert updates_of(sidecar, sid, "current_mode_update") == [
        {"sessionUpdate": "current_mode_update", "currentModeId": "plan"}
    ]
    result = await sidecar.prompt(sid, "make a plan to edit the files and run the tests")
    offered = result["_meta"]["threadline"]["toolOffers"][0]["offered"]
    assert "update_plan" in offered and "run_command" not in offered
    changed = await sidecar.call(
        "session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "auto"}
    )
    assert [o["currentValue"] for o in changed["configOptions"] if o["id"] == "mode"] == ["auto"]
    with pytest.raises(JsonRpcException) as bad:
        await sidecar.call("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
    assert "unknown mode 'yolo'" in str(bad.value)
    child = (await sidecar.call("session/fork", {"sessionId": sid}))["sessionId"]
    await sidecar.stop()
    other = await start_sidecar(home)
    try:
        for session in (sid, child):
            loaded = await other.call(
                "session/load", {"sessionId": session, "cwd": str(tmp_path), "mcpServers": []}
            )
            assert loaded["modes"]["currentModeId"] == "auto"
        resumed = await other.call(
            "session/resume", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
        )
        assert resumed["modes"]["currentModeId"] == "auto"
    finally:
        await other.stop()


async def test_auto_mode_edits_without_asking_and_sandboxes_commands(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    asked = allow(sidecar)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    run = call("run_command", command=f"echo ran; echo x > {outside}")
    model = scripted([EDIT], [run], [{"text": "done"}])
    sid = await sidecar.new_session(cwd=str(tmp_path), model=model, mode="auto")
    await sidecar.prompt(sid, "edit and run")
    assert (tmp_path / "a.txt").read_text() == "new\n"
    done = blocks(await history(sidecar, sid), "tool_result")
    if confine.available():
        assert [a["kind"] for a in asked] == []  # nothing asked at all
        assert done[1]["rawOutput"]["ranIn"] == "sandbox"
        assert not outside.exists()  # the sandbox kept the write inside the workspace
    else:  # no sandbox here: a command still asks
        assert [a["kind"] for a in asked] == ["execute"]


async def test_always_allow_keeps_a_prefix_rule_that_never_widens(
    sidecar: SidecarClient, home: Path, tmp_path: Path
) -> None:
    answers = iter(["allow_always", "reject_once", "reject_once"])
    asked: list[dict[str, Any]] = []

    async def permission(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"outcome": {"outcome": "selected", "optionId": next(answers)}}

    sidecar.on_request("session/request_permission", permission)
    model = scripted(
        [call("run_command", command="echo hi there")],
        [call("run_command", command="echo hi again")],
        [call("run_command", command="echo hi; touch pwned")],
        [call("run_command", command="echo bye")],
        [{"text": "done"}],
    )
    sid = await sidecar.new_session(cwd=str(tmp_path), model=model)
    await sidecar.prompt(sid, "run them")
    names = {o["optionId"]: o["name"] for o in asked[0]["options"]}
    assert names["allow_always"] == "Always allow `echo hi …`"
    assert [a["toolCall"]["rawInput"]["command"] for a in asked] == [
        "echo hi there",
        "echo hi; touch pwned",  # shell control characters: the rule does not cover it
        "echo bye",
    ]
    assert not (tmp_path / "pwned").exists()
    assert "hi again" in results(await history(sidecar, sid))[1]
    rules = (await sidecar.call("session/approvals", {"sessionId": sid}))["rules"]
    assert [(r["tool"], r["scope"], r["prefix"], r["allow"]) for r in rules] == [
        ("run_command", "prefix", "echo hi", True)
    ]
    await sidecar.stop()
    other = await start_sidecar(home)
    try:
        kept = (await other.call("session/approvals", {"sessionId": sid}))["rules"]
        assert kept == rules  # stored with the session
        left = await other.call(
            "session/remove_approval", {"sessionId": sid, "ruleId": rules[0]["id"]}
        )
        assert left == {"rules": []}
        with pytest.raises(JsonRpcException):
            await other.call(
                "session/remove_approval", {"sessionId": sid, "ruleId": rules[0]["id"]}
            )
    finally:
        await other.stop()
