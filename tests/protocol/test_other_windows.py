"""What one window shows of work another window's sidecar does: a turn waiting for
its user's permission is ``requires_action`` everywhere, and a prompt left waiting by
a sender that died while the session was idle is held, not run unasked.

Real ``threadline serve`` processes sharing one home, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.protocol.test_while_running import history, info, model, prompt, said, text, until
from tests.support import SidecarClient, start_sidecar
from threadline.engine.ids import new_id, now_iso
from threadline.store.factory import open_store

pytestmark = pytest.mark.timeout(120)

DEPLOY = {"name": "deploy", "description": "Deploy the app", "needsApproval": True}


@pytest.fixture(autouse=True)
def shared_store(store_url: str | None, monkeypatch: pytest.MonkeyPatch) -> str | None:
    if store_url is not None:
        monkeypatch.setenv("THREADLINE_STORE", store_url)
    return store_url


async def shown_waiting(
    a: SidecarClient, b: SidecarClient, sid: str, request: str, answer: dict[str, Any]
) -> None:
    """Run a turn in ``a`` that puts ``request`` to its user; while the user has not
    answered, both windows show ``requires_action``; answered, the turn ends and
    ``b`` shows the session idle."""
    asked = asyncio.Event()
    answered: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    async def held(params: dict[str, Any]) -> dict[str, Any]:
        asked.set()
        return await answered

    a.on_request(request, held)
    await b.call("session/load", {"sessionId": sid, "mcpServers": []})
    turn = prompt(a, sid, "go")
    await asyncio.wait_for(asked.wait(), 30)
    await until(lambda: info(b, sid, "state")[-1:] == ["requires_action"])
    owner = info(b, sid, "owner")[-1]
    assert owner["here"] is False and owner["pid"] == a._server.pid  # type: ignore[union-attr]
    assert info(a, sid, "state")[-1] == "requires_action"
    answered.set_result(answer)
    assert (await turn)["stopReason"] == "end_turn"
    await until(lambda: info(b, sid, "state")[-1:] == ["idle"])


async def test_a_permission_waiting_in_one_window_is_requires_action_in_the_other(
    home: Path,
) -> None:
    a = await start_sidecar(home)
    b = await start_sidecar(home)
    try:

        async def deploy(params: dict[str, Any]) -> dict[str, Any]:
            return {"content": [{"type": "text", "text": "deployed"}]}

        a.on_request("tool/call", deploy)
        sid = await a.new_session(
            model=model([{"tool_call": {"name": "deploy", "arguments": {}}}], [{"text": "Done."}]),
            tools=[DEPLOY],
            builtinTools=False,
        )
        allow = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        await shown_waiting(a, b, sid, "session/request_permission", allow)
    finally:
        await a.stop()
        await b.stop()


async def test_a_prompt_whose_sender_died_while_the_session_was_idle_is_held(
    home: Path, store_url: str | None
) -> None:
    a = await start_sidecar(home)
    b = await start_sidecar(home)
    try:
        sid = await a.new_session(model=model([{"echo": True}]), builtinTools=False)
        await a.prompt(sid, "first")
        await b.call("session/load", {"sessionId": sid, "mcpServers": []})
        # A sidecar queued a prompt as the session's work ended, and died before it
        # ran it: its row waits, and no process works on the session.
        store = open_store(home / "threadline.db", store_url)
        try:
            gone = store.add_pending(
                sid, new_id("msg"), "queue", text("left behind"), "a-dead-sidecar", now_iso()
            )
        finally:
            store.close()
        for window in (a, b):  # shown queued at once, then held in every window
            await until(
                lambda w=window: any(q and q[0]["state"] == "queued" for q in info(w, sid, "queue"))
            )
            await until(
                lambda w=window: (
                    info(w, sid, "queue")[-1][:1]
                    and info(w, sid, "queue")[-1][0]["state"] == "held"
                ),
                timeout=30,
            )
        listed = (await b.call("session/queue/list", {"sessionId": sid}))["prompts"]
        assert [(q["id"], q["state"]) for q in listed] == [(gone.id, "held")]
        assert [said(m) for m in await history(a, sid) if m["role"] == "user"] == ["first"]

        # A new prompt runs at once; the held one stays until the user resumes it.
        await b.prompt(sid, "second")
        users = [said(m) for m in await history(b, sid) if m["role"] == "user"]
        assert users == ["first", "second"]
        await a.call("session/queue/resume", {"sessionId": sid})
        await until(
            lambda: info(a, sid, "queue")[-1:] == [[]] and info(a, sid, "state")[-1:] == ["idle"]
        )
        users = [said(m) for m in await history(a, sid) if m["role"] == "user"]
        assert users == ["first", "second", "left behind"]
    finally:
        await a.stop()
        await b.stop()


async def test_a_question_waiting_in_one_window_is_requires_action_in_the_other(
    home: Path,
) -> None:
    a = await start_sidecar(home, initialize=False)
    caps = {"elicitation": {"form": {}}}
    await a.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
    b = await start_sidecar(home)
    try:
        ask = {"tool_call": {"name": "ask_user", "arguments": {"question": "Which one?"}}}
        sid = await a.new_session(model=model([ask], [{"text": "Fine."}]))
        reply = {"action": "accept", "content": {"answer": "that one"}}
        await shown_waiting(a, b, sid, "elicitation/create", reply)
    finally:
        await a.stop()
        await b.stop()
