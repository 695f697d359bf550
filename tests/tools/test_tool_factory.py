"""Composing a session's registry from every tool source, and closing it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.fakes import echo_server_entry
from tests.tools.test_mcp_tools import live_children, wait_until_gone
from threadline.providers.base import ToolCallFinal
from threadline.tools.client import ClientTool
from threadline.tools.factory import SessionTools, build_registry
from threadline.tools.workspace import ReadFile, WriteFile

pytestmark = pytest.mark.timeout(90)

WEATHER = {"name": "get_weather", "description": "Weather", "inputSchema": {"type": "object"}}
DONE = {"name": "done", "description": "Signal the end", "inputSchema": {"type": "object"}}


def test_registry_orders_sources_and_respects_capabilities() -> None:
    reg = build_registry(tools=[WEATHER], exit_tools=[DONE], client_capabilities={})
    builtin = ["read_file", "list_directory", "search_text", "edit_file", "run_command"]
    assert reg.names() == [*builtin, "update_plan", "get_weather"]
    assert [s.name for s in reg.specs()][-1] == "done"
    assert isinstance(reg.get("get_weather"), ClientTool)
    writer = build_registry(client_capabilities={"fs": {"writeTextFile": True}})
    assert isinstance(writer.get("write_file"), WriteFile)
    part = reg.partition(
        [
            ToolCallFinal("1", "read_file", {}),
            ToolCallFinal("2", "done", {}),
            ToolCallFinal("3", "x", {}),
        ]
    )
    assert ([c.name for c in part.normal], [c.name for c in part.exits]) == (
        ["read_file"],
        ["done"],
    )
    assert [c.name for c in part.unknown] == ["x"]


def test_client_and_exit_tools_shadow_built_ins() -> None:
    mine = {"name": "read_file", "description": "The editor's own reader"}
    reg = build_registry(tools=[mine], exit_tools=[{"name": "search_text"}])
    assert isinstance(reg.get("read_file"), ClientTool)
    assert reg.get("search_text") is None and "search_text" in reg.exit_names
    names = [s.name for s in reg.specs()]
    assert len(names) == len(set(names))  # no name offered to the model twice


def test_built_ins_can_be_switched_off_or_chosen() -> None:
    assert build_registry(tools=[WEATHER], builtin=False).names() == ["get_weather"]
    only = build_registry(builtin=["read_file"])
    assert only.names() == ["read_file"] and isinstance(only.get("read_file"), ReadFile)


def test_extra_server_tools_join_and_can_be_shadowed() -> None:
    extra = ClientTool({"name": "remember"})
    reg = build_registry(builtin=["read_file"], extra_tools=[extra], tools=[WEATHER])
    assert reg.names() == ["read_file", "remember", "get_weather"]
    shadowed = build_registry(extra_tools=[extra], exit_tools=[{"name": "remember"}])
    assert shadowed.get("remember") is None and "remember" in shadowed.exit_names


async def test_session_tools_with_mcp_then_close(tmp_path: Path) -> None:
    """As the engine builds a session's toolset: the registry first, MCP servers added."""
    before = live_children()
    st = SessionTools(
        build_registry(
            tools=[{"name": "echo__echo", "description": "a client tool with a clashing name"}],
            exit_tools=[DONE],
        ),
        cwd=str(tmp_path),
    )
    added = await st.add_mcp_servers(
        [echo_server_entry(), {"type": "ws", "name": "web", "url": "ws://x"}]
    )
    assert "echo__add" in added
    names = st.registry.names()
    assert isinstance(st.registry.get("echo__echo"), ClientTool)  # the client's name wins
    assert "echo__echo_2" in names and "echo__add" in names
    assert st.failures == {"web": "ws MCP servers are not supported; use stdio, http or sse"}
    # session/load or resume with the same servers: nothing restarts, nothing is added.
    assert await st.add_mcp_servers([echo_server_entry()]) == []
    assert await st.add_mcp_servers([]) == []
    started = live_children() - before
    assert len(started) == 1
    await st.aclose()
    await wait_until_gone(started)
    await st.aclose()  # idempotent


async def test_session_tools_without_mcp_starts_nothing(tmp_path: Path) -> None:
    before = live_children()
    st = SessionTools(build_registry(tools=[WEATHER]), cwd=str(tmp_path))
    assert await st.add_mcp_servers([]) == []
    assert st.mcp is None and st.failures == {}
    assert live_children() == before
    await st.aclose()
