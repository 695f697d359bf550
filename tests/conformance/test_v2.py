"""ACP v2 conformance: a client written here against v2 (``wire.py``) drives a real
``threadline serve`` per case; every message both ways is checked against the v2
models (the ``agents`` fixture), and each case checks one tagged requirement."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.wire import Agent, scripted

INFO = {"name": "conformance-suite", "version": "1.0.0"}
Start = Callable[[], Any]

pytestmark = pytest.mark.timeout(90)


async def initialize(agent: Agent, version: int = 2) -> dict[str, Any]:
    return await agent.call(
        "initialize", {"protocolVersion": version, "info": INFO, "capabilities": {}}
    )


def advertised(result: dict[str, Any], path: str) -> Any:
    """A CAPABILITY requirement applies only when the agent advertised it."""
    node: Any = result
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    if node is None:
        pytest.skip(f"not applicable: {path} not advertised")
    return node


async def session(agent: Agent, cwd: Path, model: str) -> str:
    advertised(await initialize(agent), "capabilities.session")
    result = await agent.call(
        "session/new", {"cwd": str(cwd), "_meta": {"_threadline": {"model": model}}}
    )
    return result["sessionId"]


def text(update: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in update.get("content") or [])


# -- initialize ------------------------------------------------------------------------------


@pytest.mark.requirement("TL-V2-INIT-001")
async def test_initialize_v2_answers_v2(agents: Start) -> None:
    result = await initialize(await agents())
    assert result["protocolVersion"] == 2
    assert result["info"]["name"] == "threadline" and result["info"]["version"]
    session = result["capabilities"]["session"]

    def markers(node: Any) -> list[Any]:
        if isinstance(node, dict):
            return [v for k, v in node.items() if k != "_meta" for v in [v, *markers(v)]]
        return []

    assert all(not isinstance(m, bool) for m in markers(result["capabilities"]))
    assert session["prompt"]["embeddedContext"] == {} and session["mcp"]["stdio"] == {}
    assert "agentCapabilities" not in result and "loadSession" not in str(result)


@pytest.mark.requirement("TL-V2-INIT-002")
@pytest.mark.parametrize(("asked", "got"), [(3, 2), (1, 1)])
async def test_version_negotiation(agents: Start, asked: int, got: int) -> None:
    agent = await agents()
    params: dict[str, Any] = {"protocolVersion": asked}
    if asked >= 2:
        params |= {"info": INFO, "capabilities": {}}
    result = await agent.call("initialize", params)
    assert result["protocolVersion"] == got
    assert ("info" in result) == (got == 2) and ("agentCapabilities" in result) == (got == 1)


# -- sessions ----------------------------------------------------------------------------------


@pytest.mark.requirement("TL-V2-SESSION-001")
async def test_new_session_has_config_options_and_modes_are_one(
    agents: Start, tmp_path: Path
) -> None:
    agent = await agents()
    advertised(await initialize(agent), "capabilities.session")
    result = await agent.call("session/new", {"cwd": str(tmp_path)})
    assert result["sessionId"] and "modes" not in result
    by_id = {o["configId"]: o for o in result["configOptions"]}
    assert by_id["mode"]["category"] == "mode" and by_id["mode"]["type"] == "select"
    assert by_id["model"]["category"] == "model"
    refused = await agent.send(
        "session/set_mode", {"sessionId": result["sessionId"], "modeId": "plan"}
    )
    assert refused["error"]["code"] == -32601


@pytest.mark.requirement("TL-V2-SESSION-003")
async def test_set_config_option_answers_every_option_and_updates(
    agents: Start, tmp_path: Path
) -> None:
    agent = await agents()
    sid = await session(agent, tmp_path, scripted([{"text": "ok"}]))
    params = {"sessionId": sid, "configId": "mode", "type": "id", "value": "plan"}
    result = await agent.call("session/set_config_option", params)
    by_id = {o["configId"]: o for o in result["configOptions"]}
    assert by_id["mode"]["currentValue"] == "plan" and "model" in by_id
    shown = await agent.wait_for(lambda _: agent.updates(sid, "config_option_update"))
    modes = [o for o in shown[-1]["configOptions"] if o["configId"] == "mode"]
    assert modes[0]["currentValue"] == "plan"
    # Not only modes: every option's change is announced (here the built-in tools).
    params = {"sessionId": sid, "configId": "builtinTools", "type": "id", "value": "off"}
    await agent.call("session/set_config_option", params)

    def tools_off(_: object) -> bool:
        last = agent.updates(sid, "config_option_update")[-1]["configOptions"]
        return any(o["configId"] == "builtinTools" and o["currentValue"] == "off" for o in last)

    assert await agent.wait_for(tools_off)


@pytest.mark.requirement("TL-V2-SESSION-004")
async def test_list_and_close(agents: Start, tmp_path: Path) -> None:
    agent = await agents()
    sid = await session(agent, tmp_path, scripted([{"text": "ok"}]))
    listed = await agent.call("session/list", {})
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]
    assert listed["sessions"][0]["cwd"] == str(tmp_path)
    assert await agent.call("session/close", {"sessionId": sid}) == {}


# -- the prompt lifecycle ----------------------------------------------------------------------


@pytest.mark.requirement("TL-V2-PROMPT-001")
async def test_prompt_is_answered_on_acceptance(agents: Start, tmp_path: Path) -> None:
    agent = await agents()
    sid = await session(agent, tmp_path, scripted([{"text": "Thinking"}, {"hang": True}]))
    result = await agent.call(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Hi"}]}
    )
    assert result == {}
    assert not [u for u in agent.updates(sid, "state_update") if u["state"] == "idle"]
    await agent.notify("session/cancel", {"sessionId": sid})
    await agent.idle(sid)
    unknown = {"sessionId": "sess_unknown", "prompt": [{"type": "text", "text": "Hi"}]}
    refused = await agent.send("session/prompt", unknown)
    assert refused["error"]["code"] == -32002  # never accepted: the error is the answer


@pytest.mark.requirement("TL-V2-PROMPT-002")
async def test_the_accepted_prompt_is_a_user_message_with_its_stored_id(
    agents: Start, tmp_path: Path
) -> None:
    agent = await agents()
    sid = await session(agent, tmp_path, scripted([{"text": "Hello."}]))
    prompt = [{"type": "text", "text": "Say hello."}]
    await agent.call("session/prompt", {"sessionId": sid, "prompt": prompt})
    await agent.idle(sid)
    shown = agent.updates(sid, "user_message")
    assert [u["content"] for u in shown] == [prompt]
    history = (await agent.call("_threadline/history", {"sessionId": sid}))["messages"]
    assert shown[0]["messageId"] == history[0]["messageId"]


@pytest.mark.requirement("TL-V2-STATE-001")
async def test_running_then_output_then_one_idle_end_turn(agents: Start, tmp_path: Path) -> None:
    agent = await agents()
    sid = await session(agent, tmp_path, scripted([{"text": "One "}, {"text": "two."}]))
    await agent.call(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Go"}]}
    )
    await agent.idle(sid)
    kinds = [
        u["sessionUpdate"] if u["sessionUpdate"] != "state_update" else u["state"]
        for u in agent.updates(sid)
        if u["sessionUpdate"] in ("state_update", "agent_message_chunk")
    ]
    assert kinds[0] == "running" and kinds[-1] == "idle"
    assert kinds.index("agent_message_chunk") > kinds.index("running")
    ends = [u for u in agent.updates(sid, "state_update") if "stopReason" in u]
    assert [u["stopReason"] for u in ends] == ["end_turn"]


@pytest.mark.requirement("TL-V2-STATE-002")
async def test_cancel_is_confirmed_by_idle_cancelled(agents: Start, tmp_path: Path) -> None:
    agent = await agents()
    sid = await session(agent, tmp_path, scripted([{"text": "Start"}, {"hang": True}]))
    await agent.call(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Go"}]}
    )
    await agent.wait_for(lambda _: agent.updates(sid, "agent_message_chunk"))
    await agent.notify("session/cancel", {"sessionId": sid})
    ends = await agent.idle(sid)
    assert ends[-1]["stopReason"] == "cancelled"


@pytest.mark.requirement("TL-V2-PROMPT-003")
async def test_a_prompt_while_running_joins_the_work(agents: Start, tmp_path: Path) -> None:
    agent = await agents()
    model = scripted(
        [{"text": "First"}, {"sleep": 1.5}, {"text": " answer."}], [{"text": "Steered."}]
    )
    sid = await session(agent, tmp_path, model)
    await agent.call(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "A"}]}
    )
    await agent.wait_for(lambda _: agent.updates(sid, "agent_message_chunk"))
    second = [{"type": "text", "text": "And B."}]
    assert await agent.call("session/prompt", {"sessionId": sid, "prompt": second}) == {}
    ends = await agent.idle(sid)
    assert [u["stopReason"] for u in ends] == ["end_turn"]
    shown = {u["messageId"]: u["content"] for u in agent.updates(sid, "user_message")}
    assert second in shown.values() and len(shown) == 2
    history = (await agent.call("_threadline/history", {"sessionId": sid}))["messages"]
    users = [m for m in history if m["role"] == "user"]
    assert [m["messageId"] for m in users] == list(shown)
    assert len({m["turnId"] for m in users}) == 1  # the same turn


@pytest.mark.requirement("TL-V2-STATE-003")
@pytest.mark.requirement("TL-V2-PERMISSION-001")
@pytest.mark.requirement("TL-V2-UPDATE-002")
@pytest.mark.requirement("TL-V2-TERMINAL-001")
async def test_tool_calls_permission_output_and_plan(agents: Start, tmp_path: Path) -> None:
    agent = await agents()
    command = "printf 'one\\n'; sleep 0.6; printf 'two\\n'"
    entries = [{"content": "Run it", "priority": "high", "status": "completed"}]
    model = scripted(
        [{"tool_call": {"name": "run_command", "arguments": {"command": command}}}],
        [{"tool_call": {"name": "update_plan", "arguments": {"entries": entries}}}],
        [{"text": "Done."}],
    )
    asked: list[dict[str, Any]] = []

    async def permission(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    agent.handlers["session/request_permission"] = permission
    sid = await session(agent, tmp_path, model)
    await agent.call(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Go"}]}
    )
    await agent.idle(sid)
    assert asked[0]["title"] and asked[0]["subject"]["type"] == "tool_call"
    assert asked[0]["subject"]["toolCall"]["kind"] == "execute"
    states = [u["state"] for u in agent.updates(sid, "state_update")]
    at = states.index("requires_action")
    assert states[at + 1] == "running"
    assert not agent.updates(sid, "tool_call")
    calls = agent.updates(sid, "tool_call_update")
    assert calls[0]["status"] == "pending" and calls[0]["title"]
    # The command ran in the sidecar: shown as an agent-owned terminal, not as chunks.
    assert not agent.updates(sid, "tool_call_content_chunk")
    call_id = calls[0]["toolCallId"]
    anchors = [
        c["terminalId"]
        for u in calls
        if u["toolCallId"] == call_id
        for c in u.get("content") or []
        if c["type"] == "terminal"
    ]
    assert anchors and len(set(anchors)) == 1
    terminal = anchors[0]
    upserts = [u for u in agent.updates(sid, "terminal_update") if u["terminalId"] == terminal]
    first = upserts[0]
    assert first["command"] == command and first["cwd"] == str(tmp_path)
    shown = base64.b64decode(first["output"]["data"])
    for u in agent.updates(sid):
        if u["sessionUpdate"] == "terminal_output_chunk" and u["terminalId"] == terminal:
            shown += base64.b64decode(u["data"])
        elif u["sessionUpdate"] == "terminal_update" and "output" in u and u is not first:
            shown = base64.b64decode(u["output"]["data"])
    assert shown == b"one\ntwo\n"
    assert agent.updates(sid, "terminal_output_chunk"), "the second line was appended"
    assert upserts[-1]["exitStatus"] == {"exitCode": 0}
    final = [u for u in calls if u["toolCallId"] == call_id][-1]
    assert final["status"] == "completed" and final["content"][0]["type"] == "terminal"
    plans = agent.updates(sid, "plan_update")
    assert plans[0]["plan"] == {"type": "items", "planId": "plan", "entries": entries}


@pytest.mark.requirement("TL-V2-UPDATE-001")
async def test_every_message_update_names_its_message(agents: Start, tmp_path: Path) -> None:
    agent = await agents()
    sid = await session(agent, tmp_path, scripted([{"thought": "Hm."}, {"text": "Yes."}]))
    await agent.call(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "?"}]}
    )
    await agent.idle(sid)
    kinds = ("message_chunk", "thought_chunk", "user_message", "agent_message", "agent_thought")
    shown = [u for u in agent.updates(sid) if u["sessionUpdate"].endswith(kinds)]
    assert {u["sessionUpdate"] for u in shown} >= {"agent_thought_chunk", "agent_message_chunk"}
    assert all(u.get("messageId") for u in shown)


@pytest.mark.requirement("TL-V2-ELICIT-001")
@pytest.mark.parametrize("form", [True, False])
async def test_the_agent_asks_only_a_client_that_can_answer(
    agents: Start, tmp_path: Path, form: bool
) -> None:
    agent = await agents()
    question = {"question": "Which colour?", "choices": ["red", "green"]}
    model = scripted(
        [{"tool_call": {"name": "ask_user", "arguments": question}}], [{"text": "Green it is."}]
    )
    asked: list[dict[str, Any]] = []

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"answer": "green"}}

    agent.handlers["elicitation/create"] = answer
    capabilities = {"elicitation": {"form": {}}} if form else {}
    await agent.call(
        "initialize", {"protocolVersion": 2, "info": INFO, "capabilities": capabilities}
    )
    new = {"cwd": str(tmp_path), "_meta": {"_threadline": {"model": model}}}
    sid = (await agent.call("session/new", new))["sessionId"]
    await agent.call(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Go"}]}
    )
    assert (await agent.idle(sid))[-1]["stopReason"] == "end_turn"
    history = (await agent.call("_threadline/history", {"sessionId": sid}))["messages"]
    results = [b for m in history for b in m["content"] if b["type"] == "tool_result"]
    if form:
        assert asked[0]["mode"] == "form" and asked[0]["sessionId"] == sid
        assert asked[0]["message"] == "Which colour?"
        assert "green" in results[0]["content"][0]["text"]
    else:
        assert asked == []
        said = "".join(u["content"]["text"] for u in agent.updates(sid, "agent_message_chunk"))
        assert "Which colour?" in said


@pytest.mark.requirement("TL-V2-BATCH-001")
async def test_a_batch_is_answered_in_one_array(agents: Start, tmp_path: Path) -> None:
    agent = await agents()
    sid = await session(agent, tmp_path, scripted([{"text": "ok"}]))
    await agent.batch(
        [
            {"jsonrpc": "2.0", "id": 101, "method": "session/list", "params": {}},
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}},
            {"jsonrpc": "2.0", "id": 102, "method": "session/close", "params": {"sessionId": sid}},
            42,
        ]
    )
    arrays = await agent.wait_for(lambda _: agent.arrays)
    answers = {a["id"]: a for a in arrays[0]}
    assert set(answers) == {101, 102, None}
    assert [s["sessionId"] for s in answers[101]["result"]["sessions"]] == [sid]
    assert answers[102]["result"] == {} and answers[None]["error"]["code"] == -32600


# -- resume, Threadline's verbs, the whole run ------------------------------------------------


@pytest.mark.requirement("TL-V2-SESSION-002")
async def test_resume_replays_only_when_asked(agents: Start, tmp_path: Path) -> None:
    writer = await agents()
    sid = await session(writer, tmp_path, scripted([{"text": "Stored answer."}]))
    await writer.call(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Q"}]}
    )
    await writer.idle(sid)
    plain, replaying = await agents(), await agents()
    for agent in (plain, replaying):
        await initialize(agent)
    await plain.call("session/resume", {"sessionId": sid, "cwd": str(tmp_path)})
    params = {"sessionId": sid, "cwd": str(tmp_path), "replayFrom": {"type": "start"}}
    result = await replaying.call("session/resume", params)
    assert {o["configId"] for o in result["configOptions"]} >= {"model", "mode"}
    kinds = ("user_message", "agent_message")
    assert not [u for u in plain.updates(sid) if u["sessionUpdate"] in kinds]
    replayed = [u for u in replaying.updates(sid) if u["sessionUpdate"] in kinds]
    assert [(u["sessionUpdate"], text(u)) for u in replayed] == [
        ("user_message", "Q"),
        ("agent_message", "Stored answer."),
    ]
    answered = next(i for i, m in enumerate(replaying.messages) if m.get("result") is result)
    last_replay = max(
        i
        for i, m in enumerate(replaying.messages)
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] in kinds
    )
    assert last_replay < answered


@pytest.mark.requirement("TL-V2-DIRS-001")
async def test_additional_directories_on_new_resume_and_fork(agents: Start, tmp_path: Path) -> None:
    agent = await agents()
    advertised(await initialize(agent), "capabilities.session.additionalDirectories")
    work, extra, other = (tmp_path / n for n in ("work", "extra", "other"))
    for folder in (work, extra, other):
        folder.mkdir()
    (extra / "notes.txt").write_text("from the extra root\n")
    read = {"name": "read_file", "arguments": {"path": str(extra / "notes.txt")}}
    model = scripted([{"tool_call": read}], [{"text": "Read."}])
    params = {
        "cwd": str(work),
        "additionalDirectories": [str(extra)],
        "_meta": {"_threadline": {"model": model}},
    }
    sid = (await agent.call("session/new", params))["sessionId"]

    async def roots() -> dict[str, Any]:
        listed = (await agent.call("session/list", {}))["sessions"]
        return {s["sessionId"]: s.get("additionalDirectories") for s in listed}

    assert (await roots())[sid] == [str(extra)]
    go = {"sessionId": sid, "prompt": [{"type": "text", "text": "Read it"}]}
    await agent.call("session/prompt", go)
    await agent.idle(sid)
    done = [u for u in agent.updates(sid, "tool_call_update") if u.get("status") == "completed"]
    assert "from the extra root" in json.dumps(done[-1]["content"])
    # resume: the list given is the complete list from now on
    resume = {"sessionId": sid, "cwd": str(work), "additionalDirectories": [str(other)]}
    await agent.call("session/resume", resume)
    assert (await roots())[sid] == [str(other)]
    fork = {"sessionId": sid, "additionalDirectories": [str(extra), str(other)]}
    child = (await agent.call("_threadline/fork", fork))["sessionId"]
    assert (await roots())[child] == [str(extra), str(other)]
    await agent.call("session/resume", {"sessionId": sid, "cwd": str(work)})
    assert not (await roots())[sid]
    relative = {"cwd": str(work), "additionalDirectories": ["extra"]}
    assert (await agent.send("session/new", relative))["error"]["code"] == -32602


@pytest.mark.requirement("TL-V2-AUTH-001")
async def test_no_authentication_is_advertised_or_required(agents: Start, tmp_path: Path) -> None:
    agent = await agents()
    params = {"protocolVersion": 2, "info": INFO, "capabilities": {"auth": {"terminal": {}}}}
    result = await agent.call("initialize", params)
    assert not result.get("authMethods") and "auth" not in result["capabilities"]
    sid = (await agent.call("session/new", {"cwd": str(tmp_path)}))["sessionId"]
    for method, sent in (("auth/login", {"methodId": "agent-login"}), ("auth/logout", {})):
        assert (await agent.send(method, sent))["error"]["code"] == -32601, method
    assert (await agent.call("session/list", {}))["sessions"][0]["sessionId"] == sid
    assert not [m for m in agent.messages if (m.get("error") or {}).get("code") == -32000]


@pytest.mark.requirement("TL-V2-EXT-001")
async def test_threadline_verbs_are_underscored(agents: Start, tmp_path: Path) -> None:
    agent = await agents()
    sid = await session(agent, tmp_path, scripted([{"text": "ok"}]))
    for method in ("session/fork", "session/load", "session/interrupt", "_acme/unknown"):
        answer = await agent.send(method, {"sessionId": sid, "cwd": str(tmp_path)})
        assert answer["error"]["code"] == -32601, method
    forked = await agent.call("_threadline/fork", {"sessionId": sid})
    assert forked["sessionId"] != sid and forked["parentSessionId"] == sid


@pytest.mark.requirement("TL-V2-EXT-002")
@pytest.mark.requirement("TL-SCHEMA-001")
@pytest.mark.requirement("TL-SCHEMA-002")
async def test_a_whole_v2_run(agents: Start, tmp_path: Path) -> None:
    """initialize → new → prompt (accepted at once) → updates → idle end_turn → a second
    prompt while running → resume with replay → _threadline/fork → _threadline/compact →
    close; every message of it valid v2 both ways, Threadline's _meta under _threadline."""
    agent = await agents()
    rounds = [[{"text": "Part one"}, {"sleep": 1.0}, {"text": "."}], [{"text": "More."}]]
    model = "scripted:" + json.dumps({"rounds": rounds, "summary": [{"text": "Asked twice."}]})
    sid = await session(agent, tmp_path, model)
    go = {"sessionId": sid, "prompt": [{"type": "text", "text": "Tell me."}]}
    assert await agent.call("session/prompt", go) == {}
    assert (await agent.idle(sid))[-1]["stopReason"] == "end_turn"
    assert await agent.call("session/prompt", go) == {}
    await agent.wait_for(lambda _: len(agent.updates(sid, "agent_message_chunk")) > 2)
    also = {"sessionId": sid, "prompt": [{"type": "text", "text": "And more."}]}
    assert await agent.call("session/prompt", also) == {}
    assert (await agent.idle(sid, 2))[-1]["stopReason"] == "end_turn"
    params = {"sessionId": sid, "cwd": str(tmp_path), "replayFrom": {"type": "start"}}
    await agent.call("session/resume", params)
    replayed = [u for u in agent.updates(sid, "user_message")]
    assert [text(u) for u in replayed[-3:]] == ["Tell me.", "Tell me.", "And more."]
    fork = await agent.call("_threadline/fork", {"sessionId": sid})
    params = {"sessionId": fork["sessionId"], "keepTurns": 0}
    compacted = await agent.call("_threadline/compact", params)
    assert compacted["summary"] == "Asked twice."
    assert await agent.call("session/close", {"sessionId": sid}) == {}
    assert any("_threadline" in (u.get("_meta") or {}) for u in agent.updates(sid))
    assert agent.checks.problems == [] and agent.checks.sent_problems == []


@pytest.mark.requirement("TL-USAGE-001")
async def test_v2_cost_is_the_sessions_and_survives_a_restart(
    agents: Start, tmp_path: Path
) -> None:
    from tests.conformance.test_v1 import priced

    first = await agents()
    sid = await session(first, tmp_path, priced())
    go = {"sessionId": sid, "prompt": [{"type": "text", "text": "Go"}]}
    await first.call("session/prompt", go)
    await first.idle(sid)
    costs = [u["cost"] for u in first.updates(sid, "usage_update")]
    assert [c["amount"] for c in costs] == pytest.approx([0.004, 0.015])
    assert {c["currency"] for c in costs} == {"USD"}
    await first.close()
    # Another process: the sum goes on from the stored answers.
    second = await agents()
    await initialize(second)
    await second.call("session/resume", {"sessionId": sid, "cwd": str(tmp_path)})
    await second.call("session/prompt", go)
    await second.idle(sid)
    later = [u["cost"]["amount"] for u in second.updates(sid, "usage_update")]
    assert later == pytest.approx([0.019, 0.030])
    assert second.checks.problems == [] and second.checks.sent_problems == []
