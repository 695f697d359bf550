"""Prompts into running work, from any window, and every window sees every change.

Real ``threadline serve`` processes over the wire, on SQLite (one home) and, where
windows are apart, on PostgreSQL (one database). A scripted model records every
request it is sent (``"record"``), so a test sees where a steering prompt reached the
model: before the turn's second model call, after the tool result, never in it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support import SidecarClient, start_sidecar

pytestmark = pytest.mark.timeout(120)

LOOKUP = {
    "name": "lookup",
    "description": "Look a word up",
    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
}


def model(*rounds: list[dict[str, Any]], **script: Any) -> str:
    return "scripted:" + json.dumps({"rounds": list(rounds), **script})


def slow(words: int, pause: float = 0.03) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for i in range(words):
        steps += [{"text": f"w{i} "}, {"sleep": pause}]
    return steps


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


def prompt(
    client: SidecarClient, sid: str, words: str, mode: str | None = None
) -> asyncio.Task[dict[str, Any]]:
    params: dict[str, Any] = {"sessionId": sid, "prompt": text(words)}
    if mode is not None:
        params["_meta"] = {"threadline": {"whileRunning": mode}}
    return asyncio.create_task(client.call("session/prompt", params))


async def history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


def said(message: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in message["content"] if b["type"] == "text")


def info(client: SidecarClient, sid: str, key: str) -> list[Any]:
    """Each ``_meta.threadline[key]`` of the session's ``session_info_update``s."""
    out: list[Any] = []
    for u in client.updates:
        up = u["update"]
        if u["sessionId"] == sid and up["sessionUpdate"] == "session_info_update":
            meta = (up.get("_meta") or {}).get("threadline") or {}
            if key in meta:
                out.append(meta[key])
    return out


def updated(client: SidecarClient, sid: str, kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda u: u["sessionId"] == sid and u["update"]["sessionUpdate"] == kind


async def until(check: Callable[[], Any], timeout: float = 30) -> Any:
    for _ in range(int(timeout / 0.02)):
        got = check()
        if got:
            return got
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met in time")


@pytest.fixture
def one_window(backend: str) -> None:
    """A test of one sidecar: the store does not matter, so it runs on SQLite only."""
    if backend != "sqlite":
        pytest.skip("one window: the store does not matter")


@pytest.fixture(autouse=True)
def shared_store(store_url: str | None, monkeypatch: pytest.MonkeyPatch) -> str | None:
    if store_url is not None:
        monkeypatch.setenv("THREADLINE_STORE", store_url)
    return store_url


async def test_a_steer_reaches_the_next_model_call_after_the_tool_result(
    home: Path, tmp_path: Path, one_window: None
) -> None:
    record = tmp_path / "requests.jsonl"
    a = await start_sidecar(home)
    try:
        sent: list[asyncio.Task[dict[str, Any]]] = []
        sid = ""

        async def lookup(params: dict[str, Any]) -> dict[str, Any]:
            # The steer is sent while the tool runs, and shown before the tool answers.
            sent.append(prompt(a, sid, "Use the red one instead.", "steer"))
            await a.wait_update(
                lambda u: (
                    u["update"]["sessionUpdate"] == "user_message_chunk"
                    and u["update"]["content"].get("text") == "Use the red one instead."
                )
            )
            return {"content": [{"type": "text", "text": "found: blue"}]}

        a.on_request("tool/call", lookup)
        sid = await a.new_session(
            model=model(
                [{"tool_call": {"name": "lookup", "arguments": {"q": "colour"}}}],
                [{"text": "Red it is."}],
                record=str(record),
                steered=True,
            ),
            tools=[LOOKUP],
            builtinTools=False,
        )
        first = await prompt(a, sid, "Pick a colour.")
        steered = await sent[0]
        assert first["stopReason"] == steered["stopReason"] == "end_turn"
        mine, theirs = first["_meta"]["threadline"], steered["_meta"]["threadline"]
        assert theirs["turnId"] == mine["turnId"], "the steer joined the running turn"
        assert theirs["messageId"] == mine["messageId"]

        calls = [json.loads(line) for line in record.read_text().splitlines()]
        assert len(calls) == 2
        first_call = [m["content"] for m in calls[0]["messages"]]
        assert not any("red one" in c for c in first_call)
        roles = [(m["role"], m["content"]) for m in calls[1]["messages"] if m["role"] != "system"]
        assert roles[-2][0] == "tool" and "red one" not in roles[-2][1]
        assert roles[-1] == ("user", "Use the red one instead.")

        msgs = await history(a, sid)
        assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "user", "assistant"]
        steer_msg = msgs[3]
        assert steer_msg["messageId"] == theirs["userMessageId"]
        assert steer_msg["turnId"] == msgs[0]["turnId"], "part of the same turn"
        assert said(msgs[4]) == "Red it is."
        shown = [
            u
            for u in a.updates
            if u["update"]["sessionUpdate"] == "user_message_chunk"
            and u["update"]["messageId"] == steer_msg["messageId"]
        ]
        assert len(shown) == 1, "shown once: when sent, not again when it joined"
        assert info(a, sid, "state")[-2:] == ["running", "idle"]
    finally:
        await a.stop()


async def test_queued_prompts_run_in_order_and_are_listed_edited_removed(
    home: Path, one_window: None
) -> None:
    a = await start_sidecar(home)
    try:
        sid = await a.new_session(model=model([{"echo": True}, *slow(15)]), builtinTools=False)
        first = prompt(a, sid, "one")
        await a.wait_update(updated(a, sid, "agent_message_chunk"))
        two = prompt(a, sid, "two", "queue")
        three = prompt(a, sid, "three", "queue")
        four = prompt(a, sid, "four", "queue")
        listed = await until(
            lambda: len(info(a, sid, "queue")) and len(info(a, sid, "queue")[-1]) == 3
        )
        assert listed
        queue = (await a.call("session/queue/list", {"sessionId": sid}))["prompts"]
        assert [q["prompt"][0]["text"] for q in queue] == ["two", "three", "four"]
        assert {q["state"] for q in queue} == {"queued"} and {q["mode"] for q in queue} == {"queue"}
        edited = await a.call(
            "session/queue/update",
            {"sessionId": sid, "id": queue[1]["id"], "prompt": text("three, edited")},
        )
        assert edited["prompt"]["prompt"] == text("three, edited")
        removed = await a.call("session/queue/remove", {"sessionId": sid, "id": queue[2]["id"]})
        assert removed["ids"] == [queue[2]["id"]]
        gone = await four
        assert gone["stopReason"] == "cancelled"
        assert gone["_meta"]["threadline"]["queue"] == "removed"
        results = [await first, await two, await three]
        assert [r["stopReason"] for r in results] == ["end_turn"] * 3
        turns = [r["_meta"]["threadline"]["turnId"] for r in results]
        assert turns == sorted(set(turns)), "each ran as its own turn, in order"
        msgs = await history(a, sid)
        users = [said(m) for m in msgs if m["role"] == "user"]
        assert users == ["one", "two", "three, edited"]
        ids = [m["messageId"] for m in msgs if m["role"] == "user"]
        assert ids[1:] == [queue[0]["id"], queue[1]["id"]], "a queued prompt keeps its id"
        assert results[1]["_meta"]["threadline"]["userMessageId"] == queue[0]["id"]
        assert info(a, sid, "queue")[-1] == []
        with pytest.raises(JsonRpcException):
            await a.call(
                "session/queue/update",
                {"sessionId": sid, "id": queue[0]["id"], "prompt": text("x")},
            )
    finally:
        await a.stop()


async def test_a_steer_or_queued_prompt_that_finds_the_session_idle_is_shown_to_its_sender(
    home: Path, one_window: None
) -> None:
    """A client sends ``whileRunning`` when it saw the session working, and leaves
    showing the prompt to the server (a steer, a queued prompt). If the work ended just
    before it arrived, the prompt runs at once as a turn of its own: its sender is shown
    it all the same, before the answer, under the id the request answers with. A plain
    prompt is not echoed (its sender shows it)."""
    a = await start_sidecar(home)
    try:
        sid = await a.new_session(model=model([{"echo": True}]), builtinTools=False)

        def user_chunks() -> list[dict[str, Any]]:
            return [
                u["update"]
                for u in a.updates
                if u["sessionId"] == sid and u["update"]["sessionUpdate"] == "user_message_chunk"
            ]

        assert (await prompt(a, sid, "plain"))["stopReason"] == "end_turn"
        assert user_chunks() == [], "a plain prompt is its sender's to show"
        for words, mode in (("late steer", "steer"), ("late queue", "queue")):
            before = len(a.updates)
            result = await prompt(a, sid, words, mode)
            assert result["stopReason"] == "end_turn"
            mine = result["_meta"]["threadline"]["userMessageId"]
            shown = [c for c in user_chunks() if c.get("messageId") == mine]
            assert [c["content"] for c in shown] == text(words), f"{mode}: shown once, whole"
            kinds = [
                (u["update"]["sessionUpdate"], u["update"].get("messageId"))
                for u in a.updates[before:]
                if u["sessionId"] == sid
            ]
            first_answer = next(i for i, k in enumerate(kinds) if k[0] == "agent_message_chunk")
            assert kinds.index(("user_message_chunk", mine)) < first_answer, "before the answer"
        users = [said(m) for m in await history(a, sid) if m["role"] == "user"]
        assert users == ["plain", "late steer", "late queue"]
    finally:
        await a.stop()


async def test_without_while_running_a_busy_session_refuses_unless_the_client_queues(
    home: Path, one_window: None
) -> None:
    a = await start_sidecar(home)
    b = await start_sidecar(home, initialize=False)
    try:
        await b.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {"_meta": {"threadline": {"whileRunning": "queue"}}},
            },
        )
        sid = await a.new_session(model=model(slow(20)), builtinTools=False)
        first = prompt(a, sid, "one")
        await a.wait_update(updated(a, sid, "agent_message_chunk"))
        with pytest.raises(JsonRpcException) as refused:
            await prompt(a, sid, "again")
        assert refused.value.code == -32010
        queued = prompt(b, sid, "two")  # b said it queues
        assert (await first)["stopReason"] == "end_turn"
        assert (await queued)["stopReason"] == "end_turn"
        assert [said(m) for m in await history(a, sid) if m["role"] == "user"] == ["one", "two"]
    finally:
        await a.stop()
        await b.stop()


async def test_interrupt_holds_the_queue_and_clear_queue_empties_it(
    home: Path, one_window: None
) -> None:
    a = await start_sidecar(home)
    try:
        sid = await a.new_session(model=model(slow(200)), builtinTools=False)
        first = prompt(a, sid, "one")
        await a.wait_update(updated(a, sid, "agent_message_chunk"))
        two = prompt(a, sid, "two", "queue")
        await until(lambda: any(len(q) == 1 for q in info(a, sid, "queue")))
        await a.call("session/interrupt", {"sessionId": sid})
        assert (await first)["stopReason"] == "cancelled"
        held = await two
        assert held["stopReason"] == "cancelled"
        assert held["_meta"]["threadline"]["queue"] == "held"
        queue = (await a.call("session/queue/list", {"sessionId": sid}))["prompts"]
        assert [(q["prompt"][0]["text"], q["state"]) for q in queue] == [("two", "held")]
        resumed = await a.call("session/queue/resume", {"sessionId": sid})
        assert resumed["ids"] == [queue[0]["id"]]
        await a.wait_update(
            lambda u: (
                u["update"]["sessionUpdate"] == "user_message_chunk"
                and u["update"]["content"].get("text") == "two"
            )
        )
        await a.call(
            "session/interrupt",
            {"sessionId": sid, "_meta": {"threadline": {"clearQueue": True}}},
        )
        await until(lambda: info(a, sid, "state")[-1] == "idle")
        three = prompt(a, sid, "three", "queue")  # idle now: runs at once
        await until(lambda: info(a, sid, "state")[-1] == "running")
        four = prompt(a, sid, "four", "queue")
        await until(lambda: any(len(q) == 1 for q in info(a, sid, "queue")[-1:]))
        await a.call(
            "session/interrupt",
            {"sessionId": sid, "_meta": {"threadline": {"clearQueue": True}}},
        )
        assert (await three)["stopReason"] == "cancelled"
        assert (await four)["_meta"]["threadline"]["queue"] == "removed"
        assert (await a.call("session/queue/list", {"sessionId": sid}))["prompts"] == []
    finally:
        await a.stop()


async def test_the_queue_survives_kill_9_held_until_resumed(home: Path) -> None:
    a = await start_sidecar(home)
    b: SidecarClient | None = None
    try:
        sid = await a.new_session(model=model([{"echo": True}, *slow(100)]), builtinTools=False)
        prompt(a, sid, "one")
        await a.wait_update(updated(a, sid, "agent_message_chunk"))
        prompt(a, sid, "two", "queue")
        await until(lambda: any(len(q) == 1 for q in info(a, sid, "queue")))
        assert a._server is not None
        os.kill(a._server.pid, signal.SIGKILL)
        await a._server.wait()
        b = await start_sidecar(home)
        await b.call("session/load", {"sessionId": sid, "mcpServers": []})
        queue = (await b.call("session/queue/list", {"sessionId": sid}))["prompts"]
        assert [(q["prompt"][0]["text"], q["state"]) for q in queue] == [("two", "held")]
        assert info(b, sid, "queue")[-1][0]["state"] == "held", "the client is shown it held"
        await asyncio.sleep(0.5)
        assert [said(m) for m in await history(b, sid) if m["role"] == "user"] == ["one"]
        await b.call("session/queue/resume", {"sessionId": sid})
        await until(
            lambda: info(b, sid, "state")[-1:] == ["idle"] and info(b, sid, "queue")[-1:] == [[]]
        )
        users = [said(m) for m in await history(b, sid) if m["role"] == "user"]
        assert users == ["one", "two"]
    finally:
        await a.stop()
        if b is not None:
            await b.stop()


async def test_steer_and_queue_from_another_window(home: Path) -> None:
    a = await start_sidecar(home)
    b = await start_sidecar(home)
    try:
        release = asyncio.Event()

        async def lookup(params: dict[str, Any]) -> dict[str, Any]:
            await release.wait()
            return {"content": [{"type": "text", "text": "found"}]}

        a.on_request("tool/call", lookup)
        sid = await a.new_session(
            model=model(
                [{"tool_call": {"name": "lookup", "arguments": {"q": "x"}}}],
                [{"echo": True}],
                steered=True,
            ),
            tools=[LOOKUP],
            builtinTools=False,
        )
        first = prompt(a, sid, "Go.")
        await until(lambda: a.server_requests)
        await b.call("session/load", {"sessionId": sid, "mcpServers": []})
        steer = prompt(b, sid, "Steer from b.", "steer")
        await a.wait_update(
            lambda u: (
                u["update"]["sessionUpdate"] == "user_message_chunk"
                and u["update"]["content"].get("text") == "Steer from b."
            )
        )
        queued = prompt(b, sid, "Queued from b.", "queue")
        await until(lambda: any(len(q) == 1 for q in info(a, sid, "queue")))
        assert info(b, sid, "state")[-1] == "running"
        owner = info(b, sid, "owner")[-1]
        assert owner["here"] is False and owner["pid"] == a._server.pid  # type: ignore[union-attr]
        release.set()
        mine, steered, later = await first, await steer, await queued
        assert mine["_meta"]["threadline"]["turnId"] == steered["_meta"]["threadline"]["turnId"]
        assert steered["stopReason"] == later["stopReason"] == "end_turn"
        assert later["_meta"]["threadline"]["turnId"] != mine["_meta"]["threadline"]["turnId"]
        msgs = await history(a, sid)
        assert [(m["role"], said(m)) for m in msgs if m["role"] == "user"] == [
            ("user", "Go."),
            ("user", "Steer from b."),
            ("user", "Queued from b."),
        ]
        assert said(msgs[-1]).strip() == "Queued from b.", "a ran it and answered it"
        # b saw a's turns live: the echo of the steer, then of the queued prompt.
        await until(lambda: "Queued from b." in b.text_of(sid))
        assert "Steer from b." in b.text_of(sid)
    finally:
        await a.stop()
        await b.stop()


async def test_a_window_that_loaded_an_idle_session_sees_every_later_change(
    home: Path,
) -> None:
    a = await start_sidecar(home)
    c = await start_sidecar(home)
    try:
        sid = await a.new_session(
            model=model(
                [{"echo": True}, {"repeat": {"text": "colour ", "count": 300}}, *slow(8)],
                summary=[{"text": "It was about colours."}],
            ),
            builtinTools=False,
        )
        await c.call("session/load", {"sessionId": sid, "mcpServers": []})
        assert (await prompt(a, sid, "red green"))["stopReason"] == "end_turn"
        await until(lambda: "red green" in c.text_of(sid))
        assert await until(lambda: "idle" in info(c, sid, "state"))
        assert "running" in info(c, sid, "state")
        titles = [u["update"].get("title") for u in c.updates if "title" in u["update"]]
        assert "red green" in titles, "the title a's first prompt gave"
        blue = await prompt(a, sid, "blue")
        await a.call("session/set_title", {"sessionId": sid, "title": "Colours"})
        await until(lambda: any(u["update"].get("title") == "Colours" for u in c.updates))
        before = blue["_meta"]["threadline"]["userMessageId"]
        await a.call("session/rewind", {"sessionId": sid, "beforeMessageId": before})
        assert await until(lambda: info(c, sid, "rewound")) == [2], "one turn left: 2 messages"
        await prompt(a, sid, "blue")
        await until(lambda: c.text_of(sid).count("blue") >= 2)
        await a.call("session/compact", {"sessionId": sid, "keepTurns": 1})
        await c.wait_update(
            lambda u: (
                u["update"]["sessionUpdate"] == "compaction_update"
                and u["update"]["status"] == "completed"
            )
        )
        fork = await a.call("session/fork", {"sessionId": sid})
        assert await until(
            lambda: fork["sessionId"] in [f["sessionId"] for f in info(c, sid, "forked")]
        )
        await a.call(
            "session/set_config_option",
            {"sessionId": sid, "configId": "model", "value": model([{"text": "other"}])},
        )
        assert await until(lambda: info(c, sid, "model"))
        await a.call("session/delete", {"sessionId": sid})
        assert await until(lambda: info(c, sid, "deleted"))
        with pytest.raises(JsonRpcException) as gone:
            await c.call("session/history", {"sessionId": sid})
        assert gone.value.code == -32002
        assert b"Traceback" not in a.stderr + c.stderr
    finally:
        await a.stop()
        await c.stop()


async def test_a_turn_from_another_window_is_shown_whole_though_requests_fold_it_in(
    home: Path,
) -> None:
    """A window busy with its own requests while another window's turn runs folds that
    turn's messages in on the request's path (`LiveSessions.sync`), not the feed's: it
    must still show them, once each."""
    a = await start_sidecar(home)
    c = await start_sidecar(home)
    try:
        sid = await a.new_session(model=model(slow(30)), builtinTools=False)
        await c.call("session/load", {"sessionId": sid, "mcpServers": []})
        turns = [prompt(a, sid, "pear")]
        while not turns[0].done():
            await c.call("session/queue/list", {"sessionId": sid})
        turns.append(prompt(a, sid, "plum"))
        while not turns[1].done():
            await c.call("session/history", {"sessionId": sid})
        for turn in turns:
            assert (await turn)["stopReason"] == "end_turn"

        def users() -> list[str]:
            return [
                u["update"]["content"]["text"]
                for u in c.updates
                if u["sessionId"] == sid and u["update"]["sessionUpdate"] == "user_message_chunk"
            ]

        await until(lambda: c.text_of(sid).count("w29") == 2)
        assert users() == ["pear", "plum"]
        assert b"Traceback" not in a.stderr + c.stderr
    finally:
        await a.stop()
        await c.stop()
