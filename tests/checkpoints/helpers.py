"""A user's own git repository to keep intact, and a session whose one tool changes
files however the test says (a client tool that declares itself mutating)."""

from __future__ import annotations

import hashlib
import inspect
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support import SidecarClient, scripted

CHANGING = scripted([{"tool_call": {"name": "change", "arguments": {}}}], [{"text": "done"}])
"""Every turn: one call of ``change``, then an answer."""

CHANGE_TOOL = {"name": "change", "description": "Change the files", "mutating": True}


def git(ws: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="u",
        GIT_AUTHOR_EMAIL="u@x",
        GIT_COMMITTER_NAME="u",
        GIT_COMMITTER_EMAIL="u@x",
        GIT_CONFIG_NOSYSTEM="1",
    )
    done = subprocess.run(
        ["git", *args], cwd=ws, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def user_repository(ws: Path) -> None:
    """A repository in the middle of work: a branch, a stash, a staged change and an
    untracked file."""
    ws.mkdir(parents=True, exist_ok=True)
    git(ws, "init", "-q", "-b", "main")
    (ws / "tracked.txt").write_text("tracked 1\n")
    git(ws, "add", "tracked.txt")
    git(ws, "commit", "-q", "-m", "one")
    git(ws, "checkout", "-q", "-b", "feature")
    (ws / "tracked.txt").write_text("stashed change\n")
    git(ws, "stash", "-q")
    (ws / "staged.txt").write_text("staged\n")
    git(ws, "add", "staged.txt")
    (ws / "untracked.txt").write_text("untracked\n")


def repository_bytes(ws: Path) -> dict[str, str]:
    """Every file under ``.git``, by content hash: what "unchanged" means."""
    out: dict[str, str] = {}
    for path in sorted((ws / ".git").rglob("*")):
        if path.is_file():
            out[str(path.relative_to(ws))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def workspace_files(ws: Path) -> dict[str, str]:
    """Every file outside ``.git``, with its text."""
    return {
        str(p.relative_to(ws)): p.read_text()
        for p in sorted(ws.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(ws).parts
    }


def acting(client: SidecarClient, actions: list[Callable[[], object]]) -> None:
    """Answer each ``tool/call`` by running the next action (awaited if it returns an
    awaitable: a call that holds its turn open)."""

    async def handler(params: dict[str, Any]) -> dict[str, Any]:
        done = actions.pop(0)()
        if inspect.isawaitable(done):
            await done
        return {"content": [{"type": "text", "text": "changed"}]}

    client.on_request("tool/call", handler)


async def changing_session(client: SidecarClient, ws: Path) -> str:
    return await client.new_session(cwd=str(ws), model=CHANGING, tools=[CHANGE_TOOL])


async def prompts(client: SidecarClient, sid: str) -> list[str]:
    """The ids of the session's user messages, in order."""
    history = (await client.call("session/history", {"sessionId": sid}))["messages"]
    return [m["messageId"] for m in history if m["role"] == "user"]


async def message_count(client: SidecarClient, sid: str) -> int:
    return len((await client.call("session/history", {"sessionId": sid}))["messages"])
