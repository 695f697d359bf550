"""Checkpoints with several sidecars, a kill -9 mid-restore, PostgreSQL, another
machine, and no git at all."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.checkpoints.helpers import (
    acting,
    changing_session,
    message_count,
    prompts,
    repository_bytes,
    user_repository,
    workspace_files,
)
from tests.support import SidecarClient, start_sidecar

pytestmark = pytest.mark.timeout(120)


async def two_turns(
    client: SidecarClient, ws: Path, env_files: int = 1, then: Callable[[], object] | None = None
) -> str:
    """A session whose first turn writes ``env_files`` files and whose second turn
    rewrites all of them (``then``: what the next call does)."""
    files = [ws / f"f{i:02}.txt" for i in range(env_files)]
    actions: list[Callable[[], object]] = [
        lambda: [f.write_text("first\n") for f in files],
        lambda: [f.write_text("second\n") for f in files],
    ]
    if then is not None:
        actions.append(then)
    acting(client, actions)
    sid = await changing_session(client, ws)
    await client.prompt(sid, "one")
    await client.prompt(sid, "two")
    return sid


async def test_kill_9_mid_restore_is_finished_at_the_next_start(home: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    slow = await start_sidecar(home, env={"THREADLINE_RESTORE_PAUSE": "0.1"})
    try:
        sid = await two_turns(slow, ws, env_files=30)
        _, second = await prompts(slow, sid)
        rewind = asyncio.ensure_future(
            slow.call(
                "session/rewind",
                {"sessionId": sid, "beforeMessageId": second, "restoreFiles": True},
            )
        )
        journals = list(home.glob("checkpoints/*/restore.json"))
        for _ in range(400):
            journals = list(home.glob("checkpoints/*/restore.json"))
            texts = set(workspace_files(ws).values())
            if journals and texts == {"first\n", "second\n"}:
                break
            await asyncio.sleep(0.02)
        assert journals, "the restore never started"
        assert _server_pid(slow) is not None
        os.kill(_server_pid(slow), signal.SIGKILL)
        rewind.cancel()
    finally:
        await slow.stop()
    half = workspace_files(ws)
    assert set(half.values()) == {"first\n", "second\n"}  # killed half-way
    again = await start_sidecar(home)
    try:
        await again.call("session/list", {})  # answered once the start's recovery ran
        assert set(workspace_files(ws).values()) == {"first\n"}  # finished at start
        assert not list(home.glob("checkpoints/*/restore.json"))
        assert len(await prompts(again, sid)) == 1  # the cut was committed first
    finally:
        await again.stop()


def _server_pid(client: SidecarClient) -> int:
    server: Any = client._server
    return int(server.pid)


async def test_two_sidecars_one_rewinds_the_other_sees_it_and_the_lease_holds(
    home: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    a = await start_sidecar(home)
    b = await start_sidecar(home)
    try:
        release = asyncio.Event()
        sid = await two_turns(a, ws, then=release.wait)
        first, second = await prompts(a, sid)
        await b.call(
            "session/rewind", {"sessionId": sid, "beforeMessageId": second, "restoreFiles": True}
        )
        assert (ws / "f00.txt").read_text() == "first\n"
        assert await prompts(a, sid) == [first]  # the other window sees the cut at once

        # While one sidecar runs a turn, the other cannot rewind the session.
        turn = asyncio.ensure_future(a.prompt(sid, "three"))
        for _ in range(500):
            if len([m for m, _ in a.server_requests if m == "tool/call"]) == 3:
                break
            await asyncio.sleep(0.02)
        with pytest.raises(JsonRpcException) as busy:
            await b.call("session/rewind", {"sessionId": sid, "beforeMessageId": first})
        assert busy.value.code == -32010
        release.set()
        await turn
    finally:
        await a.stop()
        await b.stop()


async def test_postgresql_and_a_checkpoint_from_another_machine(
    tmp_path: Path, pg_url: str
) -> None:
    ws = tmp_path / "ws"
    user_repository(ws)
    untouched = repository_bytes(ws)
    here = await start_sidecar(
        tmp_path / "home-a", env={"THREADLINE_STORE": pg_url, "THREADLINE_HOST": "box-a"}
    )
    there = await start_sidecar(
        tmp_path / "home-b", env={"THREADLINE_STORE": pg_url, "THREADLINE_HOST": "box-b"}
    )
    try:
        sid = await two_turns(here, ws)
        _, second = await prompts(here, sid)
        diff = await here.call("session/diff", {"sessionId": sid})
        assert [(f["path"], f["status"]) for f in diff["files"]] == [("f00.txt", "modified")]
        rewind = {"sessionId": sid, "beforeMessageId": second, "restoreFiles": True}
        with pytest.raises(JsonRpcException) as elsewhere:
            await there.call("session/rewind", rewind)
        assert elsewhere.value.code == -32016
        assert "box-a" in elsewhere.value.message
        assert elsewhere.value.data == {"reason": "other_host", "host": "box-a"}  # type: ignore[attr-defined]
        rewound = await here.call("session/rewind", rewind)
        assert (ws / "f00.txt").read_text() == "first\n"
        await here.call("session/unrewind", {"sessionId": sid, "rewindId": rewound["rewindId"]})
        assert (ws / "f00.txt").read_text() == "second\n"
        assert repository_bytes(ws) == untouched
    finally:
        await here.stop()
        await there.stop()


async def test_without_git_checkpoints_are_off_and_turns_still_run(
    home: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    bare = tmp_path / "no-git-bin"
    bare.mkdir()
    client = await start_sidecar(
        home, env={"PATH": str(bare), "PYTHONPATH": os.pathsep.join(sys.path)}
    )
    try:
        sid = await two_turns(client, ws)
        assert (ws / "f00.txt").read_text() == "second\n"  # the calls ran
        diff = await client.call("session/diff", {"sessionId": sid})
        assert diff["files"] == [] and "git" in diff["notice"]
        _, second = await prompts(client, sid)
        with pytest.raises(JsonRpcException) as off:
            await client.call(
                "session/rewind",
                {"sessionId": sid, "beforeMessageId": second, "restoreFiles": True},
            )
        assert off.value.code == -32016
        assert off.value.data == {"reason": "off"}  # type: ignore[attr-defined]
        # Said on each session's set-up, never as an error of the calls that ran.
        made = await client.call(
            "session/new", {"cwd": str(ws), "mcpServers": [], "_meta": {"threadline": {}}}
        )
        said = made["_meta"]["threadline"]
        assert said["checkpoints"] == "off" and "git" in said["checkpointsReason"]
        loaded = await client.call("session/resume", {"sessionId": sid, "cwd": str(ws)})
        assert loaded["_meta"]["threadline"]["checkpoints"] == "off"
        assert "checkpoints" not in json.dumps(client.updates)  # no notice per call
    finally:
        await client.stop()
    assert client.stderr.decode().count("checkpoints of files are off") == 1  # once, at start

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")},
        "PATH": str(bare),
        "PYTHONPATH": os.pathsep.join(sys.path),
        "THREADLINE_HOME": str(home),
    }
    listed = await _models(env, "--json")
    assert json.loads(listed)["checkpoints"] == {
        "on": False,
        "reason": "git was not found on PATH: checkpoints of files are off",
    }
    assert "checkpoints of files: off (git was not found on PATH" in await _models(env)


async def test_with_git_sessions_say_nothing_of_checkpoints(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    made = await sidecar.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
    assert "checkpoints" not in json.dumps(made.get("_meta") or {})
    listed = await _models({**os.environ, "THREADLINE_HOME": str(tmp_path / "home")}, "--json")
    assert json.loads(listed)["checkpoints"] == {"on": True, "reason": None}


async def _models(env: dict[str, str], *args: str) -> str:
    """``threadline models --no-check``, run as a person runs it; its stdout."""
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "threadline", "models", "--no-check", *args),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


def _info(update: dict[str, Any], key: str) -> Any:
    u = update["update"]
    if u["sessionUpdate"] != "session_info_update":
        return None
    return ((u.get("_meta") or {}).get("threadline") or {}).get(key)


async def _listed_count(client: SidecarClient, sid: str) -> int:
    listed = (await client.call("session/list", {}))["sessions"]
    return next(s["_meta"]["messageCount"] for s in listed if s["sessionId"] == sid)


async def test_a_rewind_and_its_undoing_are_shown_in_the_other_window_at_once(
    home: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    a = await start_sidecar(home)
    b = await start_sidecar(home)
    try:
        sid = await two_turns(a, ws)
        full = await message_count(a, sid)
        _, second = await prompts(a, sid)
        await b.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        rewound = await b.call(
            "session/rewind", {"sessionId": sid, "beforeMessageId": second, "restoreFiles": True}
        )
        kept = rewound["messageCount"]
        assert 0 < kept < full
        told = await a.wait_update(lambda u: _info(u, "rewound") is not None, timeout=10)
        assert told["sessionId"] == sid and _info(told, "rewound") == kept
        forked = await a.wait_update(lambda u: _info(u, "forked") is not None, timeout=10)
        assert _info(forked, "forked")["sessionId"] == rewound["rewindId"]
        assert await message_count(a, sid) == kept
        assert await _listed_count(a, sid) == await _listed_count(b, sid) == kept
        assert not [u for u in b.updates if _info(u, "rewound") is not None]  # its own

        before = len(a.updates)
        back = await b.call("session/unrewind", {"sessionId": sid, "rewindId": rewound["rewindId"]})
        assert back["messageCount"] == full
        history = (await b.call("session/history", {"sessionId": sid}))["messages"]
        cut = [m["messageId"] for m in history[kept:]]

        def replayed() -> list[str]:
            ids = [
                u["update"]["messageId"]
                for u in a.updates[before:]
                if u["update"]["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")
            ]
            return list(dict.fromkeys(ids))

        for _ in range(200):  # the cut turns come back in the other window, in order
            if replayed()[-1:] == cut[-1:]:
                break
            await asyncio.sleep(0.05)
        shown = replayed()
        assert shown[0] == cut[0] and shown[-1] == cut[-1]  # the prompt .. the answer
        assert shown == [m for m in cut if m in shown]
        assert not [u for u in a.updates[before:] if _info(u, "rewound") is not None]
        assert await _listed_count(a, sid) == await _listed_count(b, sid) == full
        assert (ws / "f00.txt").read_text() == "second\n"
    finally:
        await a.stop()
        await b.stop()
