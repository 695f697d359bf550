"""ACP 1.21's session options over the wire, with real ``threadline serve`` processes:
``config_option_update`` (and ``current_mode_update``) to the caller and to another
window that has the session open, ``builtinTools`` listed and switched everywhere,
``additionalDirectories`` as the tools' extra roots on new, resume and fork, and a
fork that connects its own MCP servers and answers its mode and options. Every
message is checked against ACP's schema (this suite's conformance fixture)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support import SidecarClient, scripted, start_sidecar
from tests.tools.fakes import echo_server_entry
from tests.tools.test_work_wire import allow, blocks, call, history, updates_of

pytestmark = pytest.mark.timeout(120)


def option(options: list[dict[str, Any]], option_id: str) -> dict[str, Any]:
    [found] = [o for o in options if o["id"] == option_id]
    return found


def edit(path: Path) -> dict[str, Any]:
    return call("edit_file", path=str(path), edits=[{"oldText": "old", "newText": "new"}])


def values(options: list[dict[str, Any]]) -> dict[str, Any]:
    return {o["id"]: o["currentValue"] for o in options}


async def option_update(client: SidecarClient, sid: str, **want: Any) -> dict[str, Any]:
    """The first ``config_option_update`` of ``sid`` whose values include ``want``."""

    def fits(u: dict[str, Any]) -> bool:
        update = u["update"]
        if u["sessionId"] != sid or update["sessionUpdate"] != "config_option_update":
            return False
        return values(update["configOptions"]).items() >= want.items()

    return (await client.wait_update(fits, timeout=20))["update"]


async def test_a_changed_option_is_shown_to_the_caller_and_to_other_windows(
    home: Path, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    reads = scripted([call("read_file", path="a.txt")], [{"text": "read"}])
    first = await start_sidecar(home)
    second = await start_sidecar(home)
    try:
        created = await first.call(
            "session/new",
            {"cwd": str(tmp_path), "mcpServers": [], "_meta": {"threadline": {"model": reads}}},
        )
        sid = created["sessionId"]
        tools = option(created["configOptions"], "builtinTools")
        assert tools["type"] == "select" and tools["currentValue"] == "on"
        assert [o["value"] for o in tools["options"]] == ["on", "off"]
        assert set(values(created["configOptions"])) == {"model", "mode", "builtinTools"}
        loaded = await second.call(
            "session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
        )
        assert values(loaded["configOptions"]) == values(created["configOptions"])
        assert updates_of(first, sid, "config_option_update") == []  # nothing changed yet

        # The mode, by session/set_mode: both windows get both updates.
        await first.call("session/set_mode", {"sessionId": sid, "modeId": "plan"})
        for client in (first, second):
            shown = await option_update(client, sid, mode="plan")
            assert values(shown["configOptions"])["builtinTools"] == "on"
            await client.wait_update(
                lambda u: (
                    u["sessionId"] == sid
                    and u["update"]
                    == {"sessionUpdate": "current_mode_update", "currentModeId": "plan"}
                )
            )

        # The built-in tools, from the other window, in ACP's boolean form: the first
        # window is shown it, and its next turn runs without them.
        changed = await second.call(
            "session/set_config_option",
            {"sessionId": sid, "configId": "builtinTools", "type": "boolean", "value": False},
        )
        assert values(changed["configOptions"])["builtinTools"] == "off"
        for client in (second, first):
            await option_update(client, sid, builtinTools="off", mode="plan")
        assert len(updates_of(first, sid, "current_mode_update")) == 1  # the mode is as it was
        await first.call("session/set_mode", {"sessionId": sid, "modeId": "code"})
        with pytest.raises(JsonRpcException) as gone:  # the scripted model says so
            await first.prompt(sid, "read a.txt")
        assert "a tool that does not exist: read_file" in str(gone.value)

        # The model, with the select's own value form for builtinTools afterwards.
        await first.call(
            "session/set_config_option",
            {"sessionId": sid, "configId": "model", "value": "scripted:echo"},
        )
        for client in (first, second):
            await option_update(client, sid, model="scripted:echo", builtinTools="off")
        await first.call(
            "session/set_config_option",
            {"sessionId": sid, "configId": "builtinTools", "value": "on"},
        )
        await option_update(second, sid, builtinTools="on", model="scripted:echo")
        with pytest.raises(JsonRpcException) as bad:
            await first.call(
                "session/set_config_option",
                {"sessionId": sid, "configId": "builtinTools", "value": "maybe"},
            )
        assert "builtinTools must be on or off" in str(bad.value)
    finally:
        await first.stop()
        await second.stop()


async def test_additional_directories_are_roots_the_tools_may_write_under(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    work, extra, elsewhere = (tmp_path / n for n in ("work", "extra", "elsewhere"))
    for folder in (work, extra, elsewhere):
        folder.mkdir()
    for name in (extra / "x.txt", elsewhere / "y.txt"):
        name.write_text("old\n")
    asked = allow(sidecar)
    model = scripted(
        [edit(extra / "x.txt")],
        [edit(elsewhere / "y.txt")],
        [{"text": "done"}],
        [edit(extra / "x.txt")],
        [{"text": "done"}],
    )
    created = await sidecar.call(
        "session/new",
        {
            "cwd": str(work),
            "additionalDirectories": [str(extra)],
            "mcpServers": [],
            "_meta": {"threadline": {"model": model}},
        },
    )
    sid = created["sessionId"]
    await sidecar.prompt(sid, "edit both files")
    assert (extra / "x.txt").read_text() == "new\n"
    assert (elsewhere / "y.txt").read_text() == "old\n"
    first, second = blocks(await history(sidecar, sid), "tool_result")
    assert first["status"] == "completed" and second["status"] != "completed"
    assert "refused" in second["content"][0]["text"]
    assert asked, "the edit in the extra root was asked for, as any edit in code mode"
    (extra / "x.txt").write_text("old\n")

    listed = await sidecar.call("session/list", {})
    assert [i.get("additionalDirectories") for i in listed["sessions"]] == [[str(extra)]]

    # ACP: the list on resume is the complete one from now on; empty is none.
    await sidecar.call("session/resume", {"sessionId": sid, "cwd": str(work), "mcpServers": []})
    listed = await sidecar.call("session/list", {})
    assert "additionalDirectories" not in listed["sessions"][0]
    await sidecar.prompt(sid, "edit it again")
    assert (extra / "x.txt").read_text() == "old\n", "no extra root after resume without one"

    with pytest.raises(JsonRpcException) as bad:
        await sidecar.call(
            "session/new",
            {"cwd": str(work), "additionalDirectories": ["relative/dir"], "mcpServers": []},
        )
    assert "absolute" in str(bad.value)


async def test_a_fork_takes_roots_and_mcp_servers_and_answers_its_options(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "f.txt").write_text("old\n")
    model = scripted([{"text": "parent"}])
    in_fork = scripted(
        [call("echo__echo", text="from the fork")], [edit(extra / "f.txt")], [{"text": "done"}]
    )
    allow(sidecar)
    sid = await sidecar.new_session(cwd=str(tmp_path), model=model, mode="plan")
    await sidecar.prompt(sid, "hi")
    broken = {"name": "broken", "command": str(tmp_path / "no-such-server"), "args": [], "env": []}
    forked = await sidecar.call(
        "session/fork",
        {
            "sessionId": sid,
            "cwd": str(tmp_path),
            "additionalDirectories": [str(extra)],
            "mcpServers": [echo_server_entry(), broken],
        },
    )
    child = forked["sessionId"]
    assert forked["parentSessionId"] == sid
    assert forked["modes"]["currentModeId"] == "plan"
    assert values(forked["configOptions"]) == {
        "model": model,
        "mode": "plan",
        "builtinTools": "on",
    }
    assert set(forked["_meta"]["threadline"]["mcpFailures"]) == {"broken"}
    await sidecar.call("session/set_mode", {"sessionId": child, "modeId": "code"})
    await sidecar.call(
        "session/set_config_option", {"sessionId": child, "configId": "model", "value": in_fork}
    )
    await sidecar.prompt(child, "echo, then write into the extra root")
    echoed, wrote = blocks(await history(sidecar, child), "tool_result")
    assert echoed["status"] == "completed" and "from the fork" in echoed["content"][0]["text"]
    assert wrote["status"] == "completed" and (extra / "f.txt").read_text() == "new\n"
    # The fork's options are its own: the parent is still in plan mode.
    resumed = await sidecar.call(
        "session/resume", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
    )
    assert values(resumed["configOptions"])["mode"] == "plan"
