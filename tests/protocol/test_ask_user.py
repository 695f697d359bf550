"""``ask_user`` over the wire, both ways: a client that advertised form elicitation
gets ``elicitation/create`` and its answer is the call's result; a client without it
gets the question as the turn's final message, and its next prompt is the answer.
Every message is checked against ACP's schema (this suite's conformance fixture)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support import RawSidecar, SidecarClient, scripted, start_sidecar

COLOURS = ["red", "green", "blue"]
ASK = {
    "tool_call": {
        "name": "ask_user",
        "arguments": {"question": "Which colour?", "choices": COLOURS},
    }
}
FORM = {
    "tool_call": {
        "name": "ask_user",
        "arguments": {
            "question": "Who are you?",
            "fields": [
                {"name": "name", "description": "your name"},
                {"name": "age", "type": "integer"},
                {"name": "editor", "choices": ["vim", "emacs"]},
            ],
        },
    }
}


async def elicitation_client(home: Path, form: bool = True) -> SidecarClient:
    client = await start_sidecar(home, initialize=False)
    caps: dict[str, Any] = {"session": {"compaction": {}}}
    if form:
        caps["elicitation"] = {"form": {}}
    await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
    return client


async def history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


def results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in messages for b in m["content"] if b["type"] == "tool_result"]


async def test_the_answer_of_an_elicitation_is_the_calls_result(home: Path) -> None:
    client = await elicitation_client(home)
    try:
        asked: list[dict[str, Any]] = []

        def states() -> list[str]:
            return [
                u["update"]["_meta"]["threadline"]["state"]
                for u in client.updates
                if u["update"]["sessionUpdate"] == "session_info_update"
                and "state" in u["update"].get("_meta", {}).get("threadline", {})
            ]

        async def answer(params: dict[str, Any]) -> dict[str, Any]:
            asked.append(params)
            # While the question waits, the session requires the user's action.
            await client.wait_update(lambda _: states()[-1:] == ["requires_action"], 10)
            return {"action": "accept", "content": {"answer": "blue"}}

        client.on_request("elicitation/create", answer)
        sid = await client.new_session(model=scripted([ASK], [{"text": "Blue it is."}]))
        result = await client.prompt(sid, "Paint the button.")
        assert result["stopReason"] == "end_turn"
        assert states() == ["running", "requires_action", "running", "idle"]
        [params] = asked
        [call] = [
            u["update"] for u in client.updates if u["update"]["sessionUpdate"] == "tool_call"
        ]
        assert params == {
            "sessionId": sid,
            "toolCallId": call["toolCallId"],
            "mode": "form",
            "message": "Which colour?",
            "requestedSchema": {
                "type": "object",
                "properties": {"answer": {"type": "string", "title": "Answer", "enum": COLOURS}},
                "required": ["answer"],
            },
        }
        assert call["title"] == "Ask: Which colour?"
        messages = await history(client, sid)
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
        [stored] = results(messages)
        assert stored["status"] == "completed" and not stored["isError"]
        assert stored["content"] == [{"type": "text", "text": "The user answered: blue"}]
        assert stored["rawOutput"] == {"action": "accept", "content": {"answer": "blue"}}
        assert client.text_of(sid).endswith("Blue it is.")
    finally:
        await client.stop()


async def test_a_form_declined_and_an_answer_that_does_not_fit(home: Path) -> None:
    client = await elicitation_client(home)
    try:
        answers = iter(
            [
                {"action": "accept", "content": {"name": "Ada", "age": 36, "editor": "vim"}},
                {"action": "accept", "content": {"name": "Ada", "age": "old", "editor": "vim"}},
                {"action": "decline"},
                {"action": "cancel"},
            ]
        )
        schemas: list[dict[str, Any]] = []

        async def answer(params: dict[str, Any]) -> dict[str, Any]:
            schemas.append(params["requestedSchema"])
            return next(answers)

        client.on_request("elicitation/create", answer)
        sid = await client.new_session(model=scripted([FORM], [{"text": "ok"}]))
        for _ in range(4):
            assert (await client.prompt(sid, "introduce yourself"))["stopReason"] == "end_turn"
        assert schemas[0] == {
            "type": "object",
            "properties": {
                "name": {"title": "name", "type": "string", "description": "your name"},
                "age": {"title": "age", "type": "integer"},
                "editor": {"title": "editor", "type": "string", "enum": ["vim", "emacs"]},
            },
            "required": ["name", "age", "editor"],
        }
        texts = [r["content"][0]["text"] for r in results(await history(client, sid))]
        assert texts[0] == "The user answered:\n- name: Ada\n- age: 36\n- editor: vim"
        assert texts[1].startswith("The user's answer does not fit the question's form: ")
        assert texts[2:] == [
            "The user declined to answer.",
            "The user dismissed the question without answering.",
        ]
    finally:
        await client.stop()


async def test_an_interrupt_withdraws_the_question(raw: RawSidecar) -> None:
    """An ACP client (one JSON object per line) waiting on the question: the cancel
    withdraws it with ``$/cancel_request``, the turn answers ``cancelled``, and the
    call's result is stored as cancelled."""

    def request(msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}

    caps = {"elicitation": {"form": {}, "url": None}}
    await raw.send(
        request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": caps}), "lines"
    )
    assert "result" in await raw.response(1)
    model = scripted([ASK], [{"text": "never said"}])
    options = {"threadline": {"model": model}}
    await raw.send(
        request(2, "session/new", {"cwd": "/tmp", "mcpServers": [], "_meta": options}), "lines"
    )
    sid = (await raw.response(2))["result"]["sessionId"]
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "Paint the button."}]}
    await raw.send(request(3, "session/prompt", prompt), "lines")
    asked = await until(raw, lambda m: m.get("method") == "elicitation/create")
    assert asked["params"]["message"] == "Which colour?"
    await raw.send(
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}, "lines"
    )
    withdrawn = await until(raw, lambda m: str(m.get("method", "")).startswith("$/"))
    assert withdrawn == {
        "jsonrpc": "2.0",
        "method": "$/cancel_request",
        "params": {"requestId": asked["id"]},
    }
    assert (await raw.response(3))["result"]["stopReason"] == "cancelled"
    await raw.send(request(4, "session/history", {"sessionId": sid}), "lines")
    messages = (await raw.response(4))["result"]["messages"]
    [stored] = results(messages)
    assert stored["status"] == "cancelled"
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]


async def until(raw: RawSidecar, pred: Any) -> dict[str, Any]:
    while True:
        msg = await raw.read(30)
        if pred(msg):
            return msg


async def test_without_elicitation_the_question_ends_the_turn(home: Path) -> None:
    client = await elicitation_client(home, form=False)
    try:
        asked: list[Any] = []

        async def answer(params: dict[str, Any]) -> dict[str, Any]:
            asked.append(params)
            return {"action": "cancel"}

        client.on_request("elicitation/create", answer)
        sid = await client.new_session(model=scripted([ASK], [{"text": "not reached"}]))
        result = await client.prompt(sid, "Paint the button.")
        assert result["stopReason"] == "end_turn"
        assert asked == [], "a client that did not advertise elicitation is never asked"
        question = "Which colour?\n\n1. red\n2. green\n3. blue"
        final_id = result["_meta"]["threadline"]["messageId"]
        assert client.text_of(sid, final_id) == question
        assert "not reached" not in client.text_of(sid)
        messages = await history(client, sid)
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
        assert messages[-1]["messageId"] == final_id
        assert messages[-1]["content"] == [{"type": "text", "text": question}]
        [stored] = results(messages)
        assert stored["status"] == "completed"
        assert "the user's next message is the answer" in stored["content"][0]["text"]

        # The next prompt is the answer: the model reads it after the question.
        await client.call(
            "session/set_config_option",
            {"sessionId": sid, "configId": "model", "value": "scripted:echo"},
        )
        assert (await client.prompt(sid, "blue"))["stopReason"] == "end_turn"
        messages = await history(client, sid)
        assert [m["role"] for m in messages][-3:] == ["assistant", "user", "assistant"]
        assert messages[-1]["content"][0]["text"].strip() == "blue"
    finally:
        await client.stop()
