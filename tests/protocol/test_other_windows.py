"""What one window shows of work another window's sidecar does: a turn waiting for
its user's permission is ``requires_action`` everywhere, and a prompt left waiting by
a sender that died while the session was idle is held, not run unasked, and one whose
sender lives is never held however long that sender stalls.

Real ``threadline serve`` processes sharing one home, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.protocol.test_while_running import history, info, model, prompt, said, until
from tests.support import SidecarClient, start_sidecar
from threadline.engine.inbox import UNATTENDED_SECONDS
from threadline.store.factory import open_store
from threadline.store.owners import current_owner

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


async def left_waiting(
    home: Path, store_url: str | None, a: SidecarClient, c: SidecarClient
) -> tuple[str, asyncio.Task[dict[str, Any]]]:
    """A session that ``a`` shows, with a prompt ``c`` queued behind work that ended
    too late to run it (this test process held the lease, like a sidecar whose turn
    was ending), and ``c`` stopped before it runs the prompt: the prompt waits in a
    session no process works on. Returns the session and ``c``'s waiting request."""
    sid = await a.new_session(model=model([{"echo": True}]), builtinTools=False)
    await a.prompt(sid, "first")
    await c.call("session/load", {"sessionId": sid, "mcpServers": []})
    store = open_store(home / "threadline.db", store_url)
    try:
        working = current_owner()
        assert store.acquire_lease(sid, working, "turn", None, time.time()).mine
        queued = prompt(c, sid, "queued", "queue")
        await until(lambda: any(q and q[0]["state"] == "queued" for q in info(a, sid, "queue")))
        assert c._server is not None
        os.kill(c._server.pid, signal.SIGSTOP)
        store.release_lease(sid, working)
    finally:
        store.close()
    await until(lambda: info(a, sid, "state")[-1:] == ["idle"])
    return sid, queued


def shown_held(client: SidecarClient, sid: str) -> bool:
    return any(q and q[0]["state"] == "held" for q in info(client, sid, "queue"))


async def test_a_prompt_whose_sender_was_killed_while_the_session_was_idle_is_held(
    home: Path, store_url: str | None
) -> None:
    a = await start_sidecar(home)
    c = await start_sidecar(home)
    try:
        sid, queued = await left_waiting(home, store_url, a, c)
        assert c._server is not None
        os.kill(c._server.pid, signal.SIGKILL)
        await c._server.wait()
        with pytest.raises(RuntimeError, match="exited"):
            await queued
        await until(lambda: shown_held(a, sid), timeout=60)
        listed = (await a.call("session/queue/list", {"sessionId": sid}))["prompts"]
        assert [(q["prompt"][0]["text"], q["state"]) for q in listed] == [("queued", "held")]
        assert [said(m) for m in await history(a, sid) if m["role"] == "user"] == ["first"]

        # A new prompt runs at once; the held one stays until the user resumes it.
        await a.prompt(sid, "second")
        await a.call("session/queue/resume", {"sessionId": sid})
        await until(
            lambda: info(a, sid, "queue")[-1:] == [[]] and info(a, sid, "state")[-1:] == ["idle"]
        )
        users = [said(m) for m in await history(a, sid) if m["role"] == "user"]
        assert users == ["first", "second", "queued"]
    finally:
        await a.stop()
        await c.stop()


async def test_a_live_but_stalled_sender_s_prompt_is_never_held_and_runs_in_order(
    home: Path, store_url: str | None
) -> None:
    """The sender is stopped (alive, its heartbeat still within the lease lifetime)
    for longer than a time-based rule would wait (`UNATTENDED_SECONDS`): no window
    holds its prompt, and once it goes on it runs the prompt itself."""
    a = await start_sidecar(home)
    c = await start_sidecar(home)
    try:
        sid, queued = await left_waiting(home, store_url, a, c)
        # Nothing marks "decided not to hold", so the window is watched for a while.
        await asyncio.sleep(UNATTENDED_SECONDS + 2)
        assert not shown_held(a, sid)
        assert c._server is not None
        os.kill(c._server.pid, signal.SIGCONT)
        assert (await queued)["stopReason"] == "end_turn"
        users = [said(m) for m in await history(a, sid) if m["role"] == "user"]
        assert users == ["first", "queued"]
        assert not shown_held(a, sid)
    finally:
        if c._server is not None and c._server.returncode is None:
            os.kill(c._server.pid, signal.SIGCONT)
        await a.stop()
        await c.stop()


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
