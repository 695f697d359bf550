"""The agent delegates: ``delegate`` calls run child sessions (scripted models, real
sidecars over the wire)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any

from tests.protocol.test_while_running import until
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


async def set_model(client: SidecarClient, sid: str, name: str) -> None:
    await client.call(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": name}
    )


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
    delegating = model(
        [delegate("count the files", child_model, context="fork")], [{"text": "parent done"}]
    )
    await set_model(sidecar, sid, delegating)
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
    # The child's transcript was copied from the parent's in memory: another sidecar,
    # which folds it from the store, reads the same history.
    other = await start_sidecar(home)
    try:
        assert await history(other, child_row["id"]) == child_history
    finally:
        await other.stop()
    # The parent's usage counts the child's model call (one piece of text each: the
    # child's answer and the parent's last; the delegating answer streamed none).
    assert result["usage"]["outputTokens"] == 2


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


async def test_two_children_run_at_once(sidecar: SidecarClient, tmp_path: Path) -> None:
    record = tmp_path / "children.jsonl"
    child_model = model([{"sleep": 1.5}, {"text": "child done"}], record=str(record))
    sid = await sidecar.new_session(
        model=model(
            [delegate("look left", child_model), delegate("look right", child_model)],
            [{"text": "both back"}],
        )
    )
    prompt = asyncio.create_task(sidecar.prompt(sid, "split the work"))
    # Both children asked their model before either of them answered.
    await until(lambda: len(requests(record)) == 2, timeout=20)
    finished = [u for u in call_updates(sidecar, sid) if u["status"] in ("completed", "failed")]
    assert finished == []
    assert (await prompt)["stopReason"] == "end_turn"
    blocks = results(await history(sidecar, sid))
    assert [result_text(b).split("\n")[0] for b in blocks] == ["child done", "child done"]
    assert len({b["childSessionId"] for b in blocks}) == 2
    tasks = sorted(r["messages"][-1]["content"] for r in requests(record))
    assert tasks == ["look left", "look right"]


async def test_interrupting_the_parent_interrupts_the_child(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    record = tmp_path / "child.jsonl"
    child_model = model([{"text": "halfway "}, {"hang": True}], record=str(record))
    sid = await sidecar.new_session(model=model([delegate("a long job", child_model)]))
    prompt = asyncio.create_task(sidecar.prompt(sid, "go"))
    child = await until(lambda: child_of(sidecar, sid) if requests(record) else None)
    await until(lambda: any("halfway" in str(u.get("content")) for u in call_updates(sidecar, sid)))
    got = await sidecar.call("session/interrupt", {"sessionId": sid})
    assert got["interrupted"] is True
    assert (await prompt)["stopReason"] == "cancelled"
    (block,) = results(await history(sidecar, sid))
    assert block["status"] == "cancelled"
    # The child's partial answer is kept, marked as cut off, and the child is free again.
    last = (await history(sidecar, child))[-1]
    assert last["role"] == "assistant" and last.get("truncated") is True
    assert "halfway" in last["content"][0]["text"]
    await set_model(sidecar, child, model([{"text": "again"}]))
    assert (await sidecar.prompt(child, "carry on"))["stopReason"] == "end_turn"


async def test_a_child_never_gets_a_tool_the_parent_lacks(
    sidecar: SidecarClient, home: Path
) -> None:
    child_model = model([{"tool_call": {"name": "run_command", "arguments": {"command": "ls"}}}])
    sid = await sidecar.new_session(
        builtinTools=["read_file", "delegate"],
        model=model(
            [delegate("run ls", child_model, tools=["read_file", "run_command"])],
            [delegate("run ls", child_model)],
            [{"text": "gave up"}],
        ),
    )
    before = len(rows(home))
    await sidecar.prompt(sid, "list the folder")
    asked, narrowed = results(await history(sidecar, sid))
    # Asking for it is refused outright: no child is made.
    assert asked["isError"] is True
    assert "run_command" in result_text(asked) and "lacks" in result_text(asked)
    assert "childSessionId" not in asked
    # A child with the parent's tools cannot call one the parent does not have.
    assert narrowed["isError"] is True
    assert "run_command" in result_text(narrowed)
    assert "does not exist" in result_text(narrowed)
    assert len(rows(home)) == before + 1


async def test_a_child_out_of_budget_is_a_tool_error(sidecar: SidecarClient) -> None:
    def read(path: str) -> list[dict[str, Any]]:
        return [{"tool_call": {"name": "read_file", "arguments": {"path": path}}}]

    child_model = model(read("a.txt"), read("b.txt"), read("c.txt"), [{"text": "never"}])
    sid = await sidecar.new_session(
        toolBudget=2, model=model([delegate("read all", child_model)], [{"text": "noted"}])
    )
    await sidecar.prompt(sid, "read everything")
    (block,) = results(await history(sidecar, sid))
    assert block["isError"] is True
    assert "tool budget" in result_text(block)
    assert block["childSessionId"]


async def test_the_depth_limit_stops_recursion(sidecar: SidecarClient) -> None:
    # Default limit 2: a child may delegate once more; the grandchild may not.
    great = model([{"text": "never runs"}])
    grandchild = model([delegate("deeper still", great)], [{"text": "grandchild did it"}])
    child_model = model([delegate("deeper", grandchild)], [{"text": "child relays"}])
    sid = await sidecar.new_session(model=model([delegate("work", child_model)], [{"text": "ok"}]))
    await sidecar.prompt(sid, "go")
    (block,) = results(await history(sidecar, sid))
    assert "child relays" in result_text(block)
    (nested,) = results(await history(sidecar, block["childSessionId"]))
    assert "grandchild did it" in result_text(nested)
    (refused,) = results(await history(sidecar, nested["childSessionId"]))
    assert refused["isError"] is True and "depth limit (2)" in result_text(refused)
    assert "childSessionId" not in refused


async def test_a_depth_limit_of_one_refuses_a_child_s_delegate(home: Path) -> None:
    grandchild = model([{"text": "grandchild ran"}])
    child_model = model([delegate("deeper", grandchild)], [{"text": "did it myself"}])
    client = await start_sidecar(home, env={"THREADLINE_DELEGATE_DEPTH": "1"})
    try:
        sid = await client.new_session(
            model=model([delegate("work", child_model)], [{"text": "ok"}])
        )
        await client.prompt(sid, "go")
        (block,) = results(await history(client, sid))
        assert "did it myself" in result_text(block)
        (refused,) = results(await history(client, block["childSessionId"]))
        assert refused["isError"] is True and "depth limit (1)" in result_text(refused)
    finally:
        await client.stop()


async def test_kill_9_mid_child_leaves_both_repaired(home: Path, tmp_path: Path) -> None:
    record = tmp_path / "child.jsonl"
    child_model = model([{"text": "working on it "}, {"hang": True}], record=str(record))
    a = await start_sidecar(home)
    try:
        sid = await a.new_session(model=model([delegate("a job", child_model)]))
        prompt = asyncio.create_task(a.prompt(sid, "go"))
        await until(lambda: any("working" in str(u.get("content")) for u in call_updates(a, sid)))
        child = child_of(a, sid)
        assert child is not None
        assert a._server is not None
        os.kill(a._server.pid, signal.SIGKILL)
        await asyncio.gather(prompt, return_exceptions=True)
    finally:
        await a.stop()
    b = await start_sidecar(home)
    try:
        (block,) = results(await history(b, sid))
        assert block["status"] == "cancelled"
        last = (await history(b, child))[-1]
        assert last["role"] == "assistant" and last.get("truncated") is True
        assert "working on it" in last["content"][0]["text"]
        for session in (sid, child):
            await set_model(b, session, model([{"text": "fine"}]))
            assert (await b.prompt(session, "still there?"))["stopReason"] == "end_turn"
    finally:
        await b.stop()


async def test_another_window_watches_a_child_live(home: Path) -> None:
    child_model = model([{"text": "step one "}, {"sleep": 1.5}, {"text": "step two"}])
    a = await start_sidecar(home)
    b = await start_sidecar(home)
    try:
        sid = await a.new_session(model=model([delegate("show me", child_model)], [{"text": "ok"}]))
        prompt = asyncio.create_task(a.prompt(sid, "go"))
        child = await until(lambda: child_of(a, sid))
        await b.call("session/load", {"sessionId": child, "cwd": "/tmp", "mcpServers": []})
        await b.wait_update(
            lambda u: (
                u["sessionId"] == child
                and "step two" in str(u["update"].get("content", {}).get("text", ""))
            )
        )
        assert "step one" in b.text_of(child)
        watching = [
            u["update"]["_meta"]["threadline"].get("watching")
            for u in b.updates
            if u["sessionId"] == child and u["update"]["sessionUpdate"] == "session_info_update"
        ]
        assert True in watching
        assert (await prompt)["stopReason"] == "end_turn"
        # This window's client never opened the child: it was shown the parent's call only.
        assert not [u for u in a.updates if u["sessionId"] == child]
    finally:
        await a.stop()
        await b.stop()


async def test_opening_a_running_child_here_shows_what_it_streamed_before(home: Path) -> None:
    """The window whose sidecar runs the child opens it mid-answer: the text streamed
    before it looked comes first, then the rest, each once."""
    child_model = model([{"text": "step one "}, {"sleep": 1.5}, {"text": "step two"}])
    a = await start_sidecar(home)
    try:
        sid = await a.new_session(model=model([delegate("show me", child_model)], [{"text": "ok"}]))
        prompt = asyncio.create_task(a.prompt(sid, "go"))
        child = await until(lambda: child_of(a, sid))
        await until(lambda: any("step one" in str(u.get("content")) for u in call_updates(a, sid)))
        await a.call("session/load", {"sessionId": child, "cwd": "/tmp", "mcpServers": []})
        await a.wait_update(lambda u: u["sessionId"] == child and "step two" in str(u["update"]))
        assert a.text_of(child) == "step one step two"
        assert (await prompt)["stopReason"] == "end_turn"
    finally:
        await a.stop()


async def test_a_child_asks_permission_as_the_parent_would_and_reports_its_changes(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    asked: list[dict[str, Any]] = []

    async def allow(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    sidecar.on_request("session/request_permission", allow)
    edit = {"path": "notes.txt", "edits": [{"oldText": "", "newText": "hello\n"}]}
    write = {"name": "edit_file", "arguments": edit}
    child_model = model([{"tool_call": write}], [{"text": "wrote the notes"}])
    sid = await sidecar.new_session(
        cwd=str(tmp_path), model=model([delegate("write notes", child_model)], [{"text": "ok"}])
    )
    await sidecar.prompt(sid, "delegate the writing")
    (block,) = results(await history(sidecar, sid))
    child = block["childSessionId"]
    # The child's write was asked for (code mode, inherited), under the child's id.
    assert [a["sessionId"] for a in asked] == [child]
    assert (tmp_path / "notes.txt").read_text() == "hello\n"
    text = result_text(block)
    assert text.startswith("wrote the notes")
    assert "Changed by the sub-agent: " in text and "notes.txt" in text
    assert any("notes.txt" in path for path in block["rawOutput"]["changed"])


def folds(home: Path) -> set[str]:
    db = sqlite3.connect(home / "threadline.db")
    try:
        return {r[0] for r in db.execute("SELECT session_id FROM folds")}
    finally:
        db.close()


async def test_a_child_of_a_long_session_keeps_its_fold_at_shutdown_not_per_turn(
    home: Path, tmp_path: Path
) -> None:
    """A fork child's fold is its parent's plus a turn: written after each of its turns,
    every delegate of a long session would write the parent's whole fold again. It is
    kept when the sidecar shuts down instead (so a restart still finds it)."""
    from threadline.engine.config import SessionConfig
    from threadline.engine.ids import now_iso
    from threadline.engine.mutations import AssistantMessage, UserMessage
    from threadline.settings import Settings
    from threadline.store.factory import open_store

    home.mkdir(parents=True)
    store = open_store(Settings(home=home, default_model=None, log_level="WARNING").db_path, None)
    sid = "sess_long_parent"
    try:
        config = SessionConfig(model="scripted:echo").to_json()
        store.create_session(sid, str(tmp_path), config, now_iso(), title="long")
        said = [
            (UserMessage if i % 2 == 0 else AssistantMessage)(
                {
                    "messageId": f"m{i}",
                    "turnId": f"{'u' if i % 2 == 0 else 'a'}{i // 2 + 1}",
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": [{"type": "text", "text": f"message {i}"}],
                    "createdAt": now_iso(),
                }
            ).to_event()
            for i in range(600)  # past the 500 events after which a fold is written
        ]
        store.append(sid, said, now_iso())
    finally:
        store.close()
    client = await start_sidecar(home)
    try:
        child_model = model([{"text": "summed up"}])
        delegating = model([delegate("sum it up", child_model, context="fork")], [{"text": "ok"}])
        await set_model(client, sid, delegating)
        await client.prompt(sid, "delegate it")
        child = child_of(client, sid)
        assert child is not None
        await until(lambda: sid in folds(home))  # the parent's, written once it was opened
        await asyncio.sleep(1.0)  # what a child's turn wrote would be there by now
        assert child not in folds(home)
        assert (await history(client, child))[-1]["content"][0]["text"] == "summed up"
    finally:
        await client.stop()
    assert child in folds(home)
