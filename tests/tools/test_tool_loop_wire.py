"""The agent loop over the wire: every edge of issue 3 with the scripted provider."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support import SidecarClient, scripted, start_sidecar
from tests.tools.fakes import echo_server_entry, remote_echo_server, remote_entry

WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments}}


async def history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


def blocks(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [b for m in messages for b in m["content"] if b["type"] == kind]


def assert_every_call_answered_once(messages: list[dict[str, Any]]) -> None:
    uses = [b["id"] for b in blocks(messages, "tool_use")]
    results = [b["toolUseId"] for b in blocks(messages, "tool_result")]
    assert sorted(uses) == sorted(results)


async def new(client: SidecarClient, model: str, **options: Any) -> str:
    options.setdefault("builtinTools", False)
    return await client.new_session(model=model, **options)


async def test_client_tool_round_trip_and_update_order(sidecar: SidecarClient) -> None:
    async def weather(params: dict[str, Any]) -> dict[str, Any]:
        assert params["name"] == "get_weather" and params["arguments"] == {"city": "Paris"}
        return {"content": [{"type": "text", "text": "Sunny, 21 C"}]}

    sidecar.on_request("tool/call", weather)
    model = scripted([call("get_weather", city="Paris")], [{"text": "It is sunny."}])
    sid = await new(sidecar, model, tools=[WEATHER])
    assert (await sidecar.prompt(sid, "Weather in Paris?"))["stopReason"] == "end_turn"
    msgs = await history(sidecar, sid)
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant"]
    [use] = blocks(msgs, "tool_use")
    [result] = blocks(msgs, "tool_result")
    assert result["toolUseId"] == use["id"] and result["status"] == "completed"
    assert result["content"] == [{"type": "text", "text": "Sunny, 21 C"}]
    tool_updates = [
        u["update"]
        for u in sidecar.updates
        if u["update"]["sessionUpdate"] in ("tool_call", "tool_call_update")
    ]
    assert [u.get("status") for u in tool_updates] == ["pending", "in_progress", "completed"]
    assert {u["toolCallId"] for u in tool_updates} == {use["id"]}
    assert tool_updates[0]["rawInput"] == {"city": "Paris"}
    assert sidecar.server_requests[0][1]["toolCallId"] == use["id"]


async def test_parallel_batch_then_barrier(sidecar: SidecarClient) -> None:
    spans: dict[str, tuple[float, float]] = {}

    async def slow(params: dict[str, Any]) -> dict[str, Any]:
        start = time.monotonic()
        await asyncio.sleep(0.4)
        spans[params["arguments"]["tag"]] = (start, time.monotonic())
        return {"content": [{"type": "text", "text": "ok"}]}

    sidecar.on_request("tool/call", slow)
    tools = [
        {"name": "par", "inputSchema": {"type": "object"}},
        {"name": "seq", "inputSchema": {"type": "object"}, "parallelizable": False},
    ]
    model = scripted(
        [call("par", tag="a"), call("par", tag="b"), call("seq", tag="c"), call("par", tag="d")],
        [{"text": "done"}],
    )
    sid = await new(sidecar, model, tools=tools)
    await sidecar.prompt(sid, "go")
    a, b, c, d = (spans[t] for t in "abcd")
    assert a[0] < b[1] and b[0] < a[1], "a and b ran together"
    assert c[0] >= max(a[1], b[1]), "the barrier waited for the batch"
    assert d[0] >= c[1], "nothing ran beside the barrier"
    msgs = await history(sidecar, sid)
    order = [b["toolUseId"] for b in blocks(msgs, "tool_result")]
    assert order == [b["id"] for b in blocks(msgs, "tool_use")], "results in call order"


async def test_budget_ends_the_turn_with_max_turn_requests(sidecar: SidecarClient) -> None:
    async def ok(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "ok"}]}

    sidecar.on_request("tool/call", ok)
    rounds = [[call("get_weather", city=f"c{i}")] for i in range(10)]
    sid = await new(sidecar, scripted(*rounds), tools=[WEATHER], toolBudget=3)
    result = await sidecar.prompt(sid, "loop")
    assert result["stopReason"] == "max_turn_requests"
    msgs = await history(sidecar, sid)
    assert len([r for r in blocks(msgs, "tool_result") if r["status"] == "completed"]) == 3
    assert_every_call_answered_once(msgs)


async def test_fallback_json_call_is_parsed_and_stripped(sidecar: SidecarClient) -> None:
    async def weather(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "Rain"}]}

    sidecar.on_request("tool/call", weather)
    written = 'Checking. {"tool": "get_weather", "arguments": {"city": "Oslo"}}'
    model = scripted([{"text": written}], [{"text": "Rain in Oslo."}])
    sid = await new(sidecar, model, tools=[WEATHER])
    assert (await sidecar.prompt(sid, "Oslo?"))["stopReason"] == "end_turn"
    msgs = await history(sidecar, sid)
    first = msgs[1]["content"]
    assert first[0]["type"] == "text" and first[0]["text"] == "Checking."
    assert first[0]["_meta"]["threadline"]["streamed"] == written, "what the client saw"
    assert first[1]["type"] == "tool_use" and first[1]["input"] == {"city": "Oslo"}
    assert sidecar.server_requests[0][1]["arguments"] == {"city": "Oslo"}


async def test_unknown_tool_fails_the_turn_and_keeps_output(sidecar: SidecarClient) -> None:
    model = scripted([{"text": "Let me try. "}, call("no_such_tool")])
    sid = await new(sidecar, model, tools=[WEATHER])
    with pytest.raises(JsonRpcException) as err:
        await sidecar.prompt(sid, "x")
    assert err.value.code == -32012
    assert err.value.data["reason"] == "tool_parse_error"
    assert err.value.data["partialText"] == "Let me try. "
    msgs = await history(sidecar, sid)
    assert_every_call_answered_once(msgs)


async def test_exit_tools_are_recorded_never_run(sidecar: SidecarClient) -> None:
    model = scripted([{"text": "All done."}, call("task_complete", summary="ok")])
    sid = await new(
        sidecar,
        model,
        exitTools=[{"name": "task_complete", "inputSchema": {"type": "object"}}],
        toolBudget=0,
    )
    assert (await sidecar.prompt(sid, "finish"))["stopReason"] == "end_turn"
    msgs = await history(sidecar, sid)
    [signal] = blocks(msgs, "exit_signal")
    assert signal["name"] == "task_complete" and signal["arguments"] == {"summary": "ok"}
    assert not blocks(msgs, "tool_use") and not blocks(msgs, "tool_result")
    assert not sidecar.server_requests
    exit_updates = [
        u["update"] for u in sidecar.updates if u["update"]["sessionUpdate"] == "tool_call"
    ]
    assert exit_updates[0]["_meta"]["threadline"]["exitSignal"] is True


async def test_repeated_line_loop_is_stopped(sidecar: SidecarClient) -> None:
    line = "I am going to check the weather in Paris right now.\n"
    model = scripted([{"repeat": {"text": line, "count": 200}}])
    sid = await new(sidecar, model)
    with pytest.raises(JsonRpcException) as err:
        await sidecar.prompt(sid, "x")
    assert err.value.code == -32012 and err.value.data["reason"] == "repeated_line_loop"
    assert err.value.data["partialText"].count(line) >= 6
    msgs = await history(sidecar, sid)
    assert msgs[-1]["truncated"] is True


async def test_timeout_and_error_become_error_results(sidecar: SidecarClient) -> None:
    async def misbehave(params: dict[str, Any]) -> dict[str, Any]:
        if params["name"] == "hangs":
            await asyncio.sleep(30)
        raise RuntimeError("tool exploded")

    sidecar.on_request("tool/call", misbehave)
    tools = [
        {"name": "hangs", "inputSchema": {"type": "object"}, "timeout": 0.5},
        {"name": "raises", "inputSchema": {"type": "object"}},
    ]
    model = scripted([call("hangs"), call("raises")], [{"text": "recovered"}])
    sid = await new(sidecar, model, tools=tools)
    assert (await sidecar.prompt(sid, "x"))["stopReason"] == "end_turn"
    results = blocks(await history(sidecar, sid), "tool_result")
    assert [r["isError"] for r in results] == [True, True]
    assert "timed out" in results[0]["content"][0]["text"]
    assert "tool exploded" in results[1]["content"][0]["text"]
    strict = await new(sidecar, model, tools=tools, strictTools=True)
    with pytest.raises(JsonRpcException) as err:
        await sidecar.prompt(strict, "x")
    assert err.value.code == -32012 and err.value.data["reason"] == "tool_execution_error"
    assert_every_call_answered_once(await history(sidecar, strict))


async def test_permission_reject_and_always(sidecar: SidecarClient) -> None:
    answers = iter(["reject_once", "allow_always"])
    asked: list[str] = []

    async def permission(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["toolCall"]["toolCallId"])
        return {"outcome": {"outcome": "selected", "optionId": next(answers)}}

    async def run(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "deleted"}]}

    sidecar.on_request("session/request_permission", permission)
    sidecar.on_request("tool/call", run)
    danger = {"name": "delete_all", "inputSchema": {"type": "object"}, "needsApproval": True}
    model = scripted(
        [call("delete_all", n=1)],
        [call("delete_all", n=2)],
        [call("delete_all", n=3)],
        [{"text": "ok"}],
    )
    sid = await new(sidecar, model, tools=[danger])
    await sidecar.prompt(sid, "go")
    results = blocks(await history(sidecar, sid), "tool_result")
    assert "refused" in results[0]["content"][0]["text"] and results[0]["isError"]
    assert [r["content"][0]["text"] for r in results[1:]] == ["deleted", "deleted"]
    assert len(asked) == 2, "allow_always is remembered for the session"
    ran = [p["arguments"]["n"] for m, p in sidecar.server_requests if m == "tool/call"]
    assert ran == [2, 3]


async def test_interrupt_during_a_tool_that_never_returns(sidecar: SidecarClient) -> None:
    async def never(params: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(3600)
        return {}

    sidecar.on_request("tool/call", never)
    model = scripted([call("get_weather", city="Rome")])
    sid = await new(sidecar, model, tools=[WEATHER])
    prompt = asyncio.ensure_future(sidecar.prompt(sid, "x"))
    await sidecar.wait_update(lambda u: u["update"].get("status") == "in_progress")
    t0 = time.monotonic()
    await sidecar.call("session/interrupt", {"sessionId": sid})
    assert time.monotonic() - t0 < 1.0
    assert (await prompt)["stopReason"] == "cancelled"
    msgs = await history(sidecar, sid)
    assert_every_call_answered_once(msgs)
    assert blocks(msgs, "tool_result")[0]["status"] == "cancelled"


async def test_repeated_identical_call_gets_no_tools_next_round(sidecar: SidecarClient) -> None:
    async def weather(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "Sunny"}]}

    sidecar.on_request("tool/call", weather)
    same = [call("get_weather", city="Paris")]
    model = scripted(same, same, same, same)
    sid = await new(sidecar, model, tools=[WEATHER])
    result = await sidecar.prompt(sid, "x")
    assert result["stopReason"] in ("end_turn", "max_turn_requests")
    ran = [p for m, p in sidecar.server_requests if m == "tool/call"]
    assert len(ran) == 1, "the identical call ran once"
    assert_every_call_answered_once(await history(sidecar, sid))


async def test_workspace_read_file_and_path_escape(sidecar: SidecarClient, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("line one\nline two\n")
    model = scripted(
        [call("read_file", path="notes.txt"), call("read_file", path="../../etc/passwd")],
        [{"text": "read"}],
    )
    sid = await sidecar.new_session(cwd=str(tmp_path), model=model)
    await sidecar.prompt(sid, "read")
    ok, escaped = blocks(await history(sidecar, sid), "tool_result")
    assert "line two" in ok["content"][0]["text"] and not ok["isError"]
    assert escaped["isError"] and "refused" in escaped["content"][0]["text"]
    update = next(
        u["update"] for u in sidecar.updates if u["update"]["sessionUpdate"] == "tool_call"
    )
    assert update["kind"] == "read"
    assert update["locations"] == [{"path": str(tmp_path / "notes.txt")}]


async def test_mcp_tool_through_the_sidecar(sidecar: SidecarClient) -> None:
    model = scripted([call("echo__echo", text="hi there")], [{"text": "echoed"}])
    result = await sidecar.call(
        "session/new",
        {
            "cwd": "/tmp",
            "mcpServers": [echo_server_entry()],
            "_meta": {"threadline": {"model": model, "builtinTools": False}},
        },
        timeout=60,
    )
    sid = result["sessionId"]
    assert (await sidecar.prompt(sid, "echo"))["stopReason"] == "end_turn"
    [res] = blocks(await history(sidecar, sid), "tool_result")
    assert "hi there" in json.dumps(res["content"])
    assert await sidecar.call("session/close", {"sessionId": sid}) == {}


async def test_remote_mcp_servers_through_the_sidecar(home: Path, tmp_path: Path) -> None:
    """``http`` and ``sse`` entries of ``mcpServers`` (real SDK servers on loopback),
    advertised at ``initialize``: their tools run in a turn; one that cannot be
    reached is reported in ``_meta`` and the session works without it."""
    sidecar = await start_sidecar(home, initialize=False)
    try:
        answer = await sidecar.initialize()
        caps = answer["agentCapabilities"]["mcpCapabilities"]
        assert caps == {"http": True, "sse": True}
        await remote_servers_in_a_turn(sidecar, tmp_path)
    finally:
        await sidecar.stop()


async def remote_servers_in_a_turn(sidecar: SidecarClient, tmp_path: Path) -> None:
    with (
        remote_echo_server("http", tmp_path) as http_url,
        remote_echo_server("sse", tmp_path) as sse_url,
    ):
        model = scripted(
            [call("streamed__echo", text="via http"), call("events__add", a=1, b=2)],
            [{"text": "done"}],
        )
        result = await sidecar.call(
            "session/new",
            {
                "cwd": str(tmp_path),
                "mcpServers": [
                    remote_entry(http_url, "http", "streamed"),
                    remote_entry(sse_url, "sse", "events"),
                    remote_entry(http_url.replace("/mcp", "/nothing"), "http", "lost"),
                ],
                "_meta": {"threadline": {"model": model, "builtinTools": False}},
            },
            timeout=60,
        )
        assert set(result["_meta"]["threadline"]["mcpFailures"]) == {"lost"}
        sid = result["sessionId"]
        sidecar.on_request("session/request_permission", allow_once)
        assert (await sidecar.prompt(sid, "use both"))["stopReason"] == "end_turn"
        texts = [
            r["content"][0]["text"] for r in blocks(await history(sidecar, sid), "tool_result")
        ]
        assert texts == ["via http", "3"]
        assert await sidecar.call("session/close", {"sessionId": sid}) == {}


async def allow_once(params: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def test_remember_survives_compaction(sidecar: SidecarClient) -> None:
    script = {
        "rounds": [[call("remember", text="The user's name is Ada.")], [{"text": "noted"}]],
        "summary": [{"text": "Summary."}],
    }
    sid = await sidecar.new_session(model="scripted:" + json.dumps(script))
    for i in range(3):
        await sidecar.prompt(sid, f"turn {i}")
    await sidecar.call("session/compact", {"sessionId": sid, "keepTurns": 1})
    results = blocks(await history(sidecar, sid), "tool_result")
    assert results[0]["content"][0]["text"].startswith("remembered as exp_")


async def test_invalid_arguments_are_shown_as_a_failed_call(sidecar: SidecarClient) -> None:
    """The model gets the feedback once (an ephemeral message); the client is shown the
    refused call and its failed result, never a user message it did not write."""
    strict_weather = {**WEATHER, "inputSchema": {**WEATHER["inputSchema"], "required": ["city"]}}
    model = scripted([call("get_weather", town="Paris")], [{"echo": True}])
    sid = await new(sidecar, model, tools=[strict_weather])
    assert (await sidecar.prompt(sid, "weather?"))["stopReason"] == "end_turn"
    assert not [r for m, r in sidecar.server_requests if m == "tool/call"], "never run"
    answer = sidecar.text_of(sid)
    assert "'city' is a required property" in answer, "the model saw the feedback"
    shown = [u["update"] for u in sidecar.updates if u["sessionId"] == sid]
    assert not [u for u in shown if u["sessionUpdate"] == "user_message_chunk"]
    [started] = [u for u in shown if u["sessionUpdate"] == "tool_call"]
    assert started["title"] == "get_weather" and started["rawInput"] == {"town": "Paris"}
    [refused] = [u for u in shown if u["sessionUpdate"] == "tool_call_update"]
    assert refused["toolCallId"] == started["toolCallId"] and refused["status"] == "failed"
    assert "'city' is a required property" in refused["content"][0]["content"]["text"]
    msgs = await history(sidecar, sid)
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert "invalid arguments" in blocks(msgs, "tool_result")[0]["content"][0]["text"]
    assert all(
        "required property" not in json.dumps(m["content"]) for m in msgs if m["role"] == "user"
    )


async def test_tool_calls_look_the_same_live_and_resumed(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    """Titles, kinds and results of every call, the ones the engine answers itself (a
    repeated call) included, are what a resumed session shows."""
    (tmp_path / "notes.txt").write_text("hello\n")
    model = scripted(
        [call("read_file", path="notes.txt")],
        [call("read_file", path="notes.txt")],
        [{"text": "done"}],
    )
    sid = await sidecar.new_session(model=model, cwd=str(tmp_path))
    assert (await sidecar.prompt(sid, "read it twice"))["stopReason"] == "end_turn"

    def tool_view(updates: list[dict[str, Any]]) -> dict[str, tuple[str, str, str]]:
        out: dict[str, tuple[str, str, str]] = {}
        for u in updates:
            if u["sessionUpdate"] == "tool_call":
                out[u["toolCallId"]] = (u["title"], u["kind"], "")
            elif u["sessionUpdate"] == "tool_call_update" and u.get("status") in (
                "completed",
                "failed",
            ):
                title, kind, _ = out[u["toolCallId"]]
                out[u["toolCallId"]] = (title, kind, u["status"])
        return out

    live = tool_view([u["update"] for u in sidecar.updates if u["sessionId"] == sid])
    before = len(sidecar.updates)
    await sidecar.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    resumed = tool_view([u["update"] for u in sidecar.updates[before:] if u["sessionId"] == sid])
    assert len(live) == 2
    assert live == resumed
    assert all(kind == "read" for _, kind, _ in live.values())
    assert next(iter(live.values()))[2] == "completed"


async def test_builtin_tools_turn_off_and_on_client_tools_stay(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    async def weather(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "Sunny"}]}

    sidecar.on_request("tool/call", weather)
    (tmp_path / "a.txt").write_text("alpha\n")
    reads = scripted([call("read_file", path="a.txt")], [{"text": "read"}])
    sid = await sidecar.new_session(model=reads, cwd=str(tmp_path), tools=[WEATHER])

    async def set_builtin(value: bool) -> None:
        await sidecar.call(
            "session/set_config_option",
            {"sessionId": sid, "configId": "builtinTools", "value": value},
        )

    await sidecar.prompt(sid, "read it")
    assert blocks(await history(sidecar, sid), "tool_result")[-1]["status"] == "completed"
    await set_builtin(False)
    with pytest.raises(JsonRpcException) as refused:
        await sidecar.prompt(sid, "read it again")
    assert "does not exist: read_file" in str(refused.value)
    # The client's own tool is still there.
    await sidecar.call(
        "session/set_config_option",
        {
            "sessionId": sid,
            "configId": "model",
            "value": scripted([call("get_weather", city="X")], [{"text": "ok"}]),
        },
    )
    await sidecar.prompt(sid, "weather?")
    assert blocks(await history(sidecar, sid), "tool_result")[-1]["content"][0]["text"] == "Sunny"
    await set_builtin(True)
    await sidecar.call(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": reads}
    )
    await sidecar.prompt(sid, "read it once more")
    assert blocks(await history(sidecar, sid), "tool_result")[-1]["status"] == "completed"
    with pytest.raises(JsonRpcException):
        await set_builtin("yes")  # type: ignore[arg-type]  # not a bool: refused
