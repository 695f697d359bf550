"""The tool sources inside the real turn loop: an in-process engine, a scripted model,
the fake editor as the client, and a real MCP server.

The session's MCP servers come from ``session/new``'s ``mcpServers``, started by the
engine into the session's toolset, as a client's would be.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from tests.support import scripted
from tests.tools.fakes import FakeEditor, build_workspace, echo_server_entry
from threadline.engine.engine import Engine
from threadline.providers.registry import ProviderRegistry
from threadline.store.sqlite import EventStore
from threadline_protocol import methods as pm

pytestmark = pytest.mark.timeout(90)


def call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments, "id": call_id}}


def results(history: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for message in history:
        for block in message["content"]:
            if block["type"] == "tool_result":
                out[block["toolUseId"]] = block
    return out


async def test_workspace_and_mcp_tools_in_a_turn(tmp_path: Path) -> None:
    ws, _ = build_workspace(tmp_path)
    editor = FakeEditor(read=True, write=True)
    editor.buffers[str(ws / "src" / "a.py")] = "print('unsaved')\n"
    editor.permission = "reject_once"
    store = EventStore(tmp_path / "threadline.db")
    engine = Engine(store, ProviderRegistry(), editor)
    model = scripted(
        [
            call("read_file", {"path": "src/a.py"}, "c_read"),
            call("read_file", {"path": "../outside/secret.txt"}, "c_escape"),
            call("search_text", {"pattern": "def \\w+", "path": "src"}, "c_search"),
            call("echo__echo", {"text": "from mcp"}, "c_mcp"),
        ],
        [call("write_file", {"path": "out.txt", "content": "new\n"}, "c_write")],
        [{"text": "done"}],
    )
    created = engine.new_session(
        pm.NewSessionParams.model_validate(
            {
                "cwd": str(ws),
                "mcpServers": [echo_server_entry()],
                "_meta": {"threadline": {"model": model}},
            }
        )
    )
    assert inspect.isawaitable(created)  # MCP servers start before the answer
    session = engine.get((await created).session_id)
    try:
        answer = await engine.prompt(
            pm.PromptParams.model_validate(
                {"sessionId": session.id, "prompt": [{"type": "text", "text": "go"}]}
            )
        )
    finally:
        await session.toolset.aclose()
        store.close()
    assert answer.stop_reason == "end_turn"

    # The engine mints every call id; map the script's names onto them, in call order.
    minted = [
        b["id"]
        for m in session.transcript.history()
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    alias = dict(zip(["c_read", "c_escape", "c_search", "c_mcp", "c_write"], minted, strict=True))
    by_id = results(session.transcript.history())
    got = {name: by_id[i] for name, i in alias.items()}
    assert got["c_read"]["status"] == "completed"
    assert "print('unsaved')" in got["c_read"]["content"][0]["text"]  # the editor's buffer
    assert got["c_escape"]["isError"] and got["c_escape"]["status"] == "failed"
    assert got["c_escape"]["content"][0]["text"].startswith("refused:")
    searched = got["c_search"]["content"][0]["text"]
    assert "src/a.py:3: def hello():" in searched  # search reads the disk, not buffers
    assert "src/pkg/b.py:1: def Hello():" in searched
    assert got["c_mcp"]["content"] == [{"type": "text", "text": "from mcp"}]
    assert (
        got["c_write"]["isError"] and "refused permission" in got["c_write"]["content"][0]["text"]
    )
    assert not (ws / "out.txt").exists()

    # Only the editor read and the write's permission reached the client.
    assert editor.methods() == ["fs/read_text_file", "session/request_permission"]
    permission = editor.requests[1][1]["toolCall"]
    assert (permission["toolCallId"], permission["kind"]) == (alias["c_write"], "edit")

    announced = {
        u["toolCallId"]: u for _, u in editor.updates if u.get("sessionUpdate") == "tool_call"
    }
    calls = {name: announced[i] for name, i in alias.items()}
    assert calls["c_read"]["kind"] == "read"
    assert calls["c_read"]["locations"] == [{"path": str(ws / "src" / "a.py")}]
    assert calls["c_escape"]["locations"] == []
    assert calls["c_search"]["kind"] == "search"
    assert calls["c_mcp"]["kind"] == "read" and calls["c_mcp"]["title"] == "echo (echo)"
    assert calls["c_write"]["kind"] == "edit"
    assert calls["c_write"]["locations"] == [{"path": str(ws / "out.txt")}]
