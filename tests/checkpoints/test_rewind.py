"""Files follow the session over the wire: real ``threadline serve``, real git."""

from __future__ import annotations

import shutil
from pathlib import Path

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


async def test_edit_diff_rewind_with_files_and_unrewind(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    user_repository(ws)
    untouched = repository_bytes(ws)
    a = ws / "a.txt"
    acting(
        sidecar,
        [
            lambda: a.write_text("one\n"),
            lambda: (a.write_text("one\ntwo\n"), (ws / "b.txt").write_text("bee\n")),
        ],
    )
    sid = await changing_session(sidecar, ws)
    await sidecar.prompt(sid, "first")
    after_first = workspace_files(ws)
    await sidecar.prompt(sid, "second")
    after_second = workspace_files(ws)

    diff = await sidecar.call("session/diff", {"sessionId": sid})
    by_path = {f["path"]: f for f in diff["files"]}
    assert sorted(by_path) == ["a.txt", "b.txt"]
    assert (by_path["a.txt"]["status"], by_path["a.txt"]["additions"]) == ("modified", 1)
    assert "+two" in by_path["a.txt"]["diff"]
    assert by_path["b.txt"]["status"] == "added"
    first, second = await prompts(sidecar, sid)
    whole = await sidecar.call("session/diff", {"sessionId": sid, "fromMessageId": first})
    assert {f["path"]: f["status"] for f in whole["files"]} == {"a.txt": "added", "b.txt": "added"}

    full = await message_count(sidecar, sid)
    rewound = await sidecar.call(
        "session/rewind", {"sessionId": sid, "beforeMessageId": second, "restoreFiles": True}
    )
    assert rewound["files"] == {"written": ["a.txt"], "deleted": ["b.txt"]}
    assert workspace_files(ws) == after_first
    assert await prompts(sidecar, sid) == [first]
    assert rewound["messageCount"] == await message_count(sidecar, sid) < full

    back = await sidecar.call(
        "session/unrewind", {"sessionId": sid, "rewindId": rewound["rewindId"]}
    )
    assert workspace_files(ws) == after_second
    assert await prompts(sidecar, sid) == [first, second]
    assert back["messageCount"] == full
    assert repository_bytes(ws) == untouched


async def test_a_command_that_creates_and_deletes_files_then_rewind(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "keep.py").write_text("print(1)\n")
    (ws / "src" / "old.py").write_text("old\n")
    (ws / ".gitignore").write_text("build/\n")

    def build() -> None:  # what a command does: files nobody named
        (ws / "src" / "old.py").unlink()
        (ws / "gen").mkdir()
        (ws / "gen" / "out.txt").write_text("generated\n")
        (ws / "build").mkdir()
        (ws / "build" / "cache.bin").write_bytes(b"\0ignored")

    acting(sidecar, [build])
    sid = await changing_session(sidecar, ws)
    before = workspace_files(ws)
    await sidecar.prompt(sid, "build it")
    diff = await sidecar.call("session/diff", {"sessionId": sid})
    assert {f["path"]: f["status"] for f in diff["files"]} == {
        "gen/out.txt": "added",
        "src/old.py": "deleted",
    }
    [prompt] = await prompts(sidecar, sid)
    await sidecar.call(
        "session/rewind", {"sessionId": sid, "beforeMessageId": prompt, "restoreFiles": True}
    )
    after = workspace_files(ws)
    assert after.pop("build/cache.bin") is not None  # ignored: never captured, never touched
    assert after == before
    assert not (ws / "gen").exists()  # the folder it emptied went too


async def test_a_user_edit_after_the_checkpoint_is_refused_then_forced(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    a = ws / "a.txt"
    acting(sidecar, [lambda: a.write_text("agent\n")])
    sid = await changing_session(sidecar, ws)
    await sidecar.prompt(sid, "change a")
    a.write_text("the user's own words\n")
    (ws / "notes.txt").write_text("the user's notes\n")  # not touched by the restore
    [prompt] = await prompts(sidecar, sid)
    rewind = {"sessionId": sid, "beforeMessageId": prompt, "restoreFiles": True}
    with pytest.raises(JsonRpcException) as refused:
        await sidecar.call("session/rewind", rewind)
    assert refused.value.code == -32015
    assert refused.value.data == {"files": ["a.txt"]}  # type: ignore[attr-defined]
    assert a.read_text() == "the user's own words\n"
    assert await prompts(sidecar, sid) == [prompt]  # nothing happened

    forced = await sidecar.call("session/rewind", {**rewind, "force": True})
    assert not a.exists()
    assert (ws / "notes.txt").read_text() == "the user's notes\n"
    # The forced restore checkpointed the user's words first: unrewind brings them back.
    await sidecar.call("session/unrewind", {"sessionId": sid, "rewindId": forced["rewindId"]})
    assert a.read_text() == "the user's own words\n"


async def test_unrewind_only_until_the_next_prompt(sidecar: SidecarClient, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    acting(sidecar, [lambda i=i: (ws / "x").write_text(str(i)) for i in range(3)])
    sid = await changing_session(sidecar, ws)
    await sidecar.prompt(sid, "one")
    await sidecar.prompt(sid, "two")
    first, second = await prompts(sidecar, sid)
    rewound = await sidecar.call("session/rewind", {"sessionId": sid, "beforeMessageId": second})
    await sidecar.prompt(sid, "three")
    with pytest.raises(JsonRpcException) as late:
        await sidecar.call("session/unrewind", {"sessionId": sid, "rewindId": rewound["rewindId"]})
    assert late.value.code == -32602
    # The cut turns are a session of their own now.
    assert await prompts(sidecar, rewound["rewindId"]) == [first, second]
    assert len(await prompts(sidecar, sid)) == 2


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
async def test_fork_with_restore_files_and_with_materialize_files(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    a = ws / "a.txt"
    acting(sidecar, [lambda: a.write_text("v1\n"), lambda: a.write_text("v2\n")])
    sid = await changing_session(sidecar, ws)
    await sidecar.prompt(sid, "one")
    history = (await sidecar.call("session/history", {"sessionId": sid}))["messages"]
    end_of_first = history[-1]["messageId"]
    await sidecar.prompt(sid, "two")
    assert a.read_text() == "v2\n"

    side = tmp_path / "side"
    made = await sidecar.call(
        "session/fork",
        {
            "sessionId": sid,
            "messageId": end_of_first,
            "cwd": str(side),
            "materializeFiles": True,
        },
    )
    assert (side / "a.txt").read_text() == "v1\n"
    assert a.read_text() == "v2\n"  # the parent's folder is untouched
    assert made["files"]["written"] == ["a.txt"]

    back = await sidecar.call(
        "session/fork", {"sessionId": sid, "messageId": end_of_first, "restoreFiles": True}
    )
    assert a.read_text() == "v1\n"
    assert back["files"] == {"written": ["a.txt"], "deleted": []}


async def test_a_data_folder_inside_the_workspace_is_neither_captured_nor_restored(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    home = ws / ".threadline"  # THREADLINE_HOME inside the workspace
    client = await start_sidecar(home)
    try:
        a = ws / "a.txt"
        acting(client, [lambda: a.write_text("one\n"), lambda: a.write_text("two\n")])
        sid = await changing_session(client, ws)
        await client.prompt(sid, "first")
        await client.prompt(sid, "second")
        first, second = await prompts(client, sid)
        whole = await client.call("session/diff", {"sessionId": sid, "fromMessageId": first})
        assert [f["path"] for f in whole["files"]] == ["a.txt"]  # no store, log or index
        data = [p for p in home.rglob("*") if p.is_file() and "log" not in p.name]
        marker = home / "mine.txt"
        marker.write_text("kept\n")
        rewound = await client.call(
            "session/rewind", {"sessionId": sid, "beforeMessageId": second, "restoreFiles": True}
        )
        assert rewound["files"] == {"written": ["a.txt"], "deleted": []}
        assert a.read_text() == "one\n" and marker.read_text() == "kept\n"
        assert all(p.exists() for p in data)  # nothing of the data folder deleted
    finally:
        await client.stop()
