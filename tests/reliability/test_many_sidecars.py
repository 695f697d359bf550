"""Many editors, one data folder: two and three real ``threadline serve`` processes on
one THREADLINE_HOME, each scenario as a user meets it (two editor windows are the
normal case, not an edge case)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support import SidecarClient, count_rows, scripted, start_sidecar

pytestmark = pytest.mark.timeout(180)

WORDS = 60


def slow_answer(words: int = WORDS, pause: float = 0.04) -> list[dict[str, Any]]:
    """An answer that streams for a while: word i, then a short pause."""
    steps: list[dict[str, Any]] = []
    for i in range(words):
        steps.append({"text": f"w{i} "})
        steps.append({"sleep": pause})
    return steps


FULL_TEXT = "".join(f"w{i} " for i in range(WORDS))

WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture(autouse=True)
def shared_store(store_url: str | None, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """Every scenario runs on SQLite (one home) and on PostgreSQL (one database)."""
    if store_url is not None:
        monkeypatch.setenv("THREADLINE_STORE", store_url)
    return store_url


@pytest.fixture
async def pair(home: Path) -> AsyncIterator[tuple[SidecarClient, SidecarClient]]:
    a = await start_sidecar(home)
    b = await start_sidecar(home)
    try:
        yield a, b
    finally:
        await a.stop()
        await b.stop()


async def new(client: SidecarClient, model: str, **options: Any) -> str:
    options.setdefault("builtinTools", False)
    return await client.new_session(model=model, **options)


async def history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [
        "".join(b["text"] for b in m["content"] if b["type"] == "text")
        for m in messages
        if m["role"] == "assistant"
    ]


def blocks(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [b for m in messages for b in m["content"] if b["type"] == kind]


async def wait_text(client: SidecarClient, sid: str, at_least: int) -> str:
    for _ in range(600):
        text = client.text_of(sid)
        if len(text) >= at_least:
            return text
        await asyncio.sleep(0.02)
    raise AssertionError(f"no streamed text in {sid}: {client.text_of(sid)!r}")


def strip_meta(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["messageId"], m["role"]) for m in messages]


async def test_a_second_sidecar_starting_leaves_a_live_answer_alone(home: Path) -> None:
    a = await start_sidecar(home)
    try:
        sid = await new(a, scripted(slow_answer()))
        prompt = asyncio.create_task(a.prompt(sid, "stream"))
        await wait_text(a, sid, 20)
        b = await start_sidecar(home)  # its start-up recovery runs now
        try:
            result = await prompt
            assert result["stopReason"] == "end_turn"
            assert a.text_of(sid) == FULL_TEXT
            for client in (a, b):
                msgs = await history(client, sid)
                assert texts(msgs) == [FULL_TEXT], "the answer the user saw is stored whole"
                assert not any(m.get("truncated") for m in msgs)
            assert b"Traceback" not in a.stderr + b.stderr
        finally:
            await b.stop()
    finally:
        await a.stop()


async def test_history_in_b_does_not_cancel_a_call_that_a_waits_on(
    pair: tuple[SidecarClient, SidecarClient],
) -> None:
    a, b = pair
    release = asyncio.Event()

    async def weather(params: dict[str, Any]) -> dict[str, Any]:
        await release.wait()
        return {"content": [{"type": "text", "text": "Sunny"}]}

    a.on_request("tool/call", weather)
    model = scripted(
        [{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        [{"text": "It is sunny."}],
    )
    sid = await new(a, model, tools=[WEATHER])
    prompt = asyncio.create_task(a.prompt(sid, "Weather?"))
    for _ in range(500):
        if a.server_requests:
            break
        await asyncio.sleep(0.02)
    seen_by_b = await history(b, sid)
    assert [r for r in blocks(seen_by_b, "tool_result")] == [], "b wrote no result"
    release.set()
    assert (await prompt)["stopReason"] == "end_turn"
    for client in (a, b):
        msgs = await history(client, sid)
        results = blocks(msgs, "tool_result")
        assert len(results) == 1 and results[0]["status"] == "completed"
        assert len(blocks(msgs, "tool_use")) == 1


async def refused_while_streaming(
    a: SidecarClient, elsewhere: Callable[[str], Awaitable[Any]]
) -> tuple[str, JsonRpcException, asyncio.Task[Any]]:
    """Start a slow turn in `a`; once it streams, the call made from another sidecar
    must be refused with -32010 (busy elsewhere). The session, the refusal, and the
    turn, which goes on."""
    sid = await new(a, scripted(slow_answer(30)))
    turn = asyncio.create_task(a.prompt(sid, "u1"))
    await wait_text(a, sid, 5)
    with pytest.raises(JsonRpcException) as err:
        await elsewhere(sid)
    assert err.value.code == -32010
    return sid, err.value, turn


async def test_the_same_session_prompted_in_two_sidecars_runs_once(
    pair: tuple[SidecarClient, SidecarClient],
) -> None:
    a, b = pair
    sid, refused, first = await refused_while_streaming(a, lambda sid: b.prompt(sid, "u2"))
    owner = refused.data["owner"]
    assert owner["pid"] > 0 and owner["host"] and owner["since"]
    assert "another editor" in str(refused)
    assert (await first)["stopReason"] == "end_turn"
    ha, hb = await history(a, sid), await history(b, sid)
    assert strip_meta(ha) == strip_meta(hb)
    assert [m["role"] for m in ha] == ["user", "assistant"]
    # Once the turn is over, b may prompt, and a sees b's turn.
    assert (await b.prompt(sid, "u2"))["stopReason"] == "end_turn"
    assert [m["role"] for m in await history(a, sid)] == ["user", "assistant"] * 2


async def test_a_session_deleted_elsewhere_is_gone_everywhere(
    home: Path, shared_store: str | None, pair: tuple[SidecarClient, SidecarClient]
) -> None:
    a, b = pair
    sid = await new(a, scripted([{"text": "hi"}]))
    await a.prompt(sid, "hello")
    await b.call("session/delete", {"sessionId": sid})
    for call in (
        a.call("session/history", {"sessionId": sid}),
        a.prompt(sid, "again"),
    ):
        with pytest.raises(JsonRpcException) as err:
            await call
        assert err.value.code == -32002
    assert count_rows(home, shared_store, "chunks") == 0
    assert count_rows(home, shared_store, "inflight") == 0
    assert count_rows(home, shared_store, "events", sid) == 0


async def test_deleting_a_session_that_streams_elsewhere_is_refused(
    pair: tuple[SidecarClient, SidecarClient],
) -> None:
    a, b = pair
    _, _, prompt = await refused_while_streaming(
        a, lambda sid: b.call("session/delete", {"sessionId": sid})
    )
    assert (await prompt)["stopReason"] == "end_turn"


async def test_a_fork_in_b_of_a_turn_streaming_in_a_has_the_partial_answer(
    pair: tuple[SidecarClient, SidecarClient],
) -> None:
    a, b = pair
    sid = await new(a, scripted(slow_answer()))
    prompt = asyncio.create_task(a.prompt(sid, "stream"))
    seen = await wait_text(a, sid, 30)
    child = (await b.call("session/fork", {"sessionId": sid}))["sessionId"]
    assert (await prompt)["stopReason"] == "end_turn"
    msgs = await history(b, child)
    assert [m["role"] for m in msgs] == ["user", "assistant"]
    partial = msgs[1]
    assert partial["truncated"] is True
    text = texts(msgs)[0]
    assert len(text) >= len(seen) and FULL_TEXT.startswith(text)
    assert partial["messageId"] not in {m["messageId"] for m in await history(a, sid)}


async def hanging_turn(a: SidecarClient) -> tuple[str, asyncio.Task[Any]]:
    """A turn in `a` that has shown its first words and then waits for ever."""
    sid = await new(a, scripted([{"text": "start "}, {"hang": True}]))
    prompt = asyncio.create_task(a.prompt(sid, "go"))
    await wait_text(a, sid, 5)
    return sid, prompt


async def test_interrupt_from_another_sidecar_stops_the_turn(
    pair: tuple[SidecarClient, SidecarClient],
) -> None:
    a, b = pair
    sid, prompt = await hanging_turn(a)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    answer = await b.call("session/interrupt", {"sessionId": sid})
    assert answer["interrupted"] is True and answer["turnId"] == "a1"
    assert loop.time() - t0 < 5
    assert (await asyncio.wait_for(prompt, 10))["stopReason"] == "cancelled"
    msgs = await history(b, sid)
    assert msgs[-1]["truncated"] is True and texts(msgs) == ["start "]


async def test_cancel_from_another_sidecar_stops_the_turn(
    pair: tuple[SidecarClient, SidecarClient],
) -> None:
    a, b = pair
    sid, prompt = await hanging_turn(a)
    b.notify("session/cancel", {"sessionId": sid})
    assert (await asyncio.wait_for(prompt, 10))["stopReason"] == "cancelled"


async def test_load_in_b_watches_the_turn_running_in_a(
    pair: tuple[SidecarClient, SidecarClient],
) -> None:
    a, b = pair
    sid = await new(a, scripted(slow_answer()))
    await a.prompt(sid, "first")
    prompt = asyncio.create_task(a.prompt(sid, "second"))
    await wait_text(a, sid, len(FULL_TEXT) + 20)
    await b.call("session/load", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
    result = await prompt
    assert result["stopReason"] == "end_turn"
    message_id = result["_meta"]["threadline"]["messageId"]
    for _ in range(200):
        if b.text_of(sid, message_id) == FULL_TEXT:
            break
        await asyncio.sleep(0.05)
    assert b.text_of(sid, message_id) == FULL_TEXT, "b saw the live turn whole, once"
    assert b.text_of(sid) == FULL_TEXT * 2


async def test_a_dead_sidecars_turn_is_taken_over(home: Path) -> None:
    a = await start_sidecar(home)
    b = await start_sidecar(home)
    try:
        sid = await new(a, scripted(slow_answer()))
        orphan = asyncio.create_task(a.prompt(sid, "stream"))
        seen = await wait_text(a, sid, 20)
        assert a._server is not None
        os.kill(a._server.pid, signal.SIGKILL)
        await a._server.wait()
        msgs = await history(b, sid)
        assert msgs[-1]["truncated"] is True
        assert texts(msgs)[0].startswith(seen), "what a's user saw survives"
        assert (await b.prompt(sid, "again"))["stopReason"] == "end_turn"
        orphan.cancel()
    finally:
        await a.stop()
        await b.stop()


async def test_list_pages_are_stable_while_another_sidecar_prompts(
    pair: tuple[SidecarClient, SidecarClient],
) -> None:
    a, b = pair
    sids = [await new(a, scripted([{"text": "ok"}])) for _ in range(120)]
    stop = asyncio.Event()

    async def churn() -> None:
        i = 0
        while not stop.is_set():
            await a.prompt(sids[i % len(sids)], "touch")  # moves it to the top
            i += 7

    worker = asyncio.create_task(churn())
    try:
        listed: list[str] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
            page = await b.call("session/list", params)
            listed += [s["sessionId"] for s in page["sessions"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
            await asyncio.sleep(0.2)
    finally:
        stop.set()
        await worker
    assert len(listed) == len(set(listed)), "no session listed twice"
    assert set(listed) == set(sids), "no session skipped"


async def test_a_closed_session_reopened_has_what_another_sidecar_added(
    pair: tuple[SidecarClient, SidecarClient],
) -> None:
    """A closed session's fold is kept (``engine/folds.py``); reopened, it takes in
    what another sidecar appended meanwhile, and a deletion elsewhere wins."""
    a, b = pair
    sid = await new(a, scripted([{"text": "hi"}]))
    await a.prompt(sid, "u1")
    await a.call("session/close", {"sessionId": sid})
    await b.prompt(sid, "u2")
    seen = await history(a, sid)
    assert [m["role"] for m in seen] == ["user", "assistant"] * 2
    assert seen == await history(b, sid)
    await a.call("session/close", {"sessionId": sid})
    assert await history(a, sid) == seen, "reopened with nothing new"
    await a.prompt(sid, "u3")
    await a.call("session/close", {"sessionId": sid})
    await b.call("session/close", {"sessionId": sid})
    assert len(await history(a, sid)) == 6
    assert await history(a, sid) == await history(b, sid)
    await a.call("session/close", {"sessionId": sid})
    await b.call("session/delete", {"sessionId": sid})
    with pytest.raises(JsonRpcException) as err:
        await a.call("session/history", {"sessionId": sid})
    assert err.value.code == -32002


async def test_a_session_open_in_b_is_repaired_when_its_owner_a_dies(home: Path) -> None:
    """B already holds the session (it watched A's turn); A dies mid-answer, which
    writes nothing: B's next read still records what A's user saw."""
    a = await start_sidecar(home)
    b = await start_sidecar(home)
    try:
        sid = await new(a, scripted(slow_answer()))
        orphan = asyncio.create_task(a.prompt(sid, "stream"))
        await wait_text(a, sid, 5)
        assert [m["role"] for m in await history(b, sid)] == ["user"]  # b caches it
        seen = await wait_text(a, sid, 40)
        assert a._server is not None
        os.kill(a._server.pid, signal.SIGKILL)
        await a._server.wait()
        msgs = await history(b, sid)
        assert [m["role"] for m in msgs] == ["user", "assistant"]
        assert msgs[-1]["truncated"] is True and texts(msgs)[0].startswith(seen)
        orphan.cancel()
    finally:
        await a.stop()
        await b.stop()
