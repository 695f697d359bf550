"""Session lifecycle over the wire, with the scripted provider (deterministic)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support import SidecarClient, scripted

HELLO = scripted([{"text": "Hello"}, {"text": ", "}, {"text": "world"}, {"text": "!"}])
HANG = scripted([{"text": "partial "}, {"text": "answer"}, {"hang": True}])


def is_chunk(sid: str):
    return lambda u: u["sessionId"] == sid and u["update"]["sessionUpdate"] == "agent_message_chunk"


def chunks(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return [
        u["update"]
        for u in client.updates
        if u["sessionId"] == sid and u["update"]["sessionUpdate"] == "agent_message_chunk"
    ]


async def test_initialize_advertises_acp_and_threadline(sidecar: SidecarClient) -> None:
    result = await sidecar.initialize()
    caps = result["agentCapabilities"]
    assert result["protocolVersion"] == 1
    assert caps["loadSession"] is True
    assert set(caps["sessionCapabilities"]) >= {"list", "resume", "close", "delete", "fork"}
    tl = caps["_meta"]["threadline"]
    assert tl["interrupt"] is True and tl["history"] is True
    assert tl["models"][0]["modelId"] == "local:smollm2-135m"
    assert result["agentInfo"]["name"] == "threadline"
    assert "serverInfo" not in result, "ACP's schema does not define it"


async def test_prompt_streams_chunks_whose_text_is_the_history_text(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(model=HELLO)
    result = await sidecar.prompt(sid, "Say hello")
    assert result["stopReason"] == "end_turn"
    assert result["usage"]["outputTokens"] > 0
    history = (await sidecar.call("session/history", {"sessionId": sid}))["messages"]
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert [m["turnId"] for m in history] == ["u1", "a1"]
    answer = history[1]
    assert answer["content"] == [{"type": "text", "text": "Hello, world!"}]
    assert answer["stopReason"] == "end_turn" and answer["usage"]["outputTokens"] == 4
    assert answer["model"] == HELLO
    ups = chunks(sidecar, sid)
    assert ups and all(u["messageId"] == answer["messageId"] for u in ups)
    assert all(u["_meta"]["threadline"]["turnId"] == "a1" for u in ups)
    assert sidecar.text_of(sid) == "Hello, world!"


async def test_turn_ids_count_up(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(model=HELLO)
    await sidecar.prompt(sid, "one")
    await sidecar.prompt(sid, "two")
    history = (await sidecar.call("session/history", {"sessionId": sid}))["messages"]
    assert [m["turnId"] for m in history] == ["u1", "a1", "u2", "a2"]
    assert len({m["messageId"] for m in history}) == 4


async def test_interrupt_returns_cancelled_and_keeps_partial_answer(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(model=HANG)
    prompt = asyncio.ensure_future(sidecar.prompt(sid, "go"))
    await sidecar.wait_update(
        lambda u: (
            u["sessionId"] == sid and "answer" in u["update"].get("content", {}).get("text", "")
        )
    )
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    result = await sidecar.call("session/interrupt", {"sessionId": sid})
    assert loop.time() - t0 < 1.0
    assert result == {"interrupted": True, "turnId": "a1"}
    assert prompt.done(), "interrupt answered only after the prompt it stopped"
    answer = await prompt
    assert answer["stopReason"] == "cancelled"
    # What streamed before the interrupt is counted (an estimate: no provider report).
    assert answer["usage"]["inputTokens"] > 0 and answer["usage"]["outputTokens"] > 0
    history = (await sidecar.call("session/history", {"sessionId": sid}))["messages"]
    last = history[-1]
    assert last["truncated"] is True and last["role"] == "assistant"
    assert last["content"] == [{"type": "text", "text": "partial answer"}]
    # idempotent: nothing is running any more
    assert await sidecar.call("session/interrupt", {"sessionId": sid}) == {"interrupted": False}
    # and the session takes a new prompt
    await sidecar.call(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": HELLO}
    )
    assert (await sidecar.prompt(sid, "again"))["stopReason"] == "end_turn"


async def test_acp_cancel_notification_interrupts(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(model=HANG)
    prompt = asyncio.ensure_future(sidecar.prompt(sid, "go"))
    await sidecar.wait_update(is_chunk(sid))
    sidecar.notify("session/cancel", {"sessionId": sid})
    assert (await asyncio.wait_for(prompt, 5))["stopReason"] == "cancelled"


async def test_cancel_request_answers_32800_and_records_truncation(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(model=HANG)
    msg_id = "prompt-to-cancel"
    future = sidecar.protocol.send_request(
        "session/prompt",
        {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]},
        msg_id=msg_id,
    )
    await sidecar.wait_update(lambda u: u["sessionId"] == sid and "answer" in str(u))
    sidecar.notify("$/cancelRequest", {"id": msg_id})
    with pytest.raises(JsonRpcException) as err:
        await asyncio.wait_for(asyncio.wrap_future(future), 5)
    assert err.value.code == -32800
    history = (await sidecar.call("session/history", {"sessionId": sid}))["messages"]
    assert history[-1]["truncated"] is True


async def test_second_prompt_while_running_is_busy(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(model=HANG)
    prompt = asyncio.ensure_future(sidecar.prompt(sid, "go"))
    await sidecar.wait_update(is_chunk(sid))
    with pytest.raises(JsonRpcException) as err:
        await sidecar.prompt(sid, "again")
    assert err.value.code == -32010
    await sidecar.call("session/interrupt", {"sessionId": sid})
    await prompt


async def test_many_sessions_run_turns_at_the_same_time(sidecar: SidecarClient) -> None:
    slow = scripted([{"text": "a"}, {"sleep": 0.3}, {"text": "b"}])
    sids = [await sidecar.new_session(model=slow) for _ in range(8)]
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    results = await asyncio.gather(*(sidecar.prompt(s, "x") for s in sids))
    assert loop.time() - t0 < 2.0, "turns of different sessions must overlap"
    assert all(r["stopReason"] == "end_turn" for r in results)
    assert all(sidecar.text_of(s) == "ab" for s in sids)


async def test_list_load_resume_close_delete(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(cwd="/tmp/project-a", model=HELLO)
    other = await sidecar.new_session(cwd="/tmp/project-b", model=HELLO)
    await sidecar.prompt(sid, "Hello there")
    listed = (await sidecar.call("session/list", {}))["sessions"]
    assert {s["sessionId"] for s in listed} == {sid, other}
    mine = next(s for s in listed if s["sessionId"] == sid)
    assert mine["title"] == "Hello there" and mine["cwd"] == "/tmp/project-a"
    assert mine["_meta"]["messageCount"] == 2 and mine["_meta"]["parentSessionId"] is None
    only_a = (await sidecar.call("session/list", {"cwd": "/tmp/project-a"}))["sessions"]
    assert [s["sessionId"] for s in only_a] == [sid]

    before = len(sidecar.updates)
    loaded = await sidecar.call("session/load", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
    assert set(loaded) == {"modes", "configOptions"}  # the session's mode and options
    assert loaded["modes"]["currentModeId"] == "code"
    assert [o["id"] for o in loaded["configOptions"]] == ["model", "mode", "builtinTools"]
    replay = [u["update"] for u in sidecar.updates[before:] if u["sessionId"] == sid]
    kinds = [u["sessionUpdate"] for u in replay]
    assert kinds[:2] == ["user_message_chunk", "agent_message_chunk"]
    assert replay[0]["content"]["text"] == "Hello there"
    assert replay[1]["content"]["text"] == "Hello, world!"

    resumed = await sidecar.call("session/resume", {"sessionId": sid, "cwd": "/tmp"})
    assert [o["id"] for o in resumed["configOptions"]] == [
        "model",
        "mode",
        "builtinTools",
    ]  # as ACP 1.21
    assert resumed == loaded
    assert await sidecar.call("session/close", {"sessionId": sid}) == {}
    # closed is unloaded, not gone: it reloads on use
    assert len((await sidecar.call("session/history", {"sessionId": sid}))["messages"]) == 2
    assert await sidecar.call("session/delete", {"sessionId": other}) == {}
    with pytest.raises(JsonRpcException) as err:
        await sidecar.call("session/history", {"sessionId": other})
    assert err.value.code == -32002


async def test_set_config_option_model(sidecar: SidecarClient) -> None:
    sid = await sidecar.new_session(model=HELLO)
    result = await sidecar.call(
        "session/set_config_option",
        {"sessionId": sid, "configId": "model", "value": "scripted:echo"},
    )
    assert result["configOptions"][0]["currentValue"] == "scripted:echo"
    await sidecar.prompt(sid, "ping pong")
    assert sidecar.text_of(sid).strip() == "ping pong"
    with pytest.raises(JsonRpcException) as err:
        await sidecar.call(
            "session/set_config_option",
            {"sessionId": sid, "configId": "model", "value": "nope:nothing"},
        )
    assert err.value.code == -32602


async def test_unknown_model_is_invalid_params(sidecar: SidecarClient) -> None:
    with pytest.raises(JsonRpcException) as err:
        await sidecar.new_session(model="gpt-17")
    assert err.value.code == -32602


async def test_provider_error_keeps_partial_text(sidecar: SidecarClient) -> None:
    failing = scripted(
        [
            {"text": "so far "},
            {"error": {"reason": "stream_cut", "message": "boom", "retryable": True}},
        ]
    )
    sid = await sidecar.new_session(model=failing)
    with pytest.raises(JsonRpcException) as err:
        await sidecar.prompt(sid, "x")
    assert err.value.code == -32011
    assert err.value.data["partialText"] == "so far "
    assert err.value.data["retryable"] is True
    history = (await sidecar.call("session/history", {"sessionId": sid}))["messages"]
    assert history[-1]["truncated"] is True
    assert history[-1]["content"][0]["text"] == "so far "
