"""What a client left in the store, read back through a fresh sidecar.

The terminal tests (the chat, Neovim in tmux) check the screen, then check here that
the session holds what the screen showed.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from threadline_client import ThreadlineClient

T = TypeVar("T")


def with_sidecar(home: Path, use: Callable[[ThreadlineClient], Awaitable[T]]) -> T:
    """Run ``use`` with a client of a fresh sidecar on ``home``, then close it."""

    async def run() -> T:
        client = await ThreadlineClient.spawn(
            env={"THREADLINE_HOME": str(home), "THREADLINE_LOG_LEVEL": "WARNING"},
            stderr=subprocess.DEVNULL,
        )
        try:
            await client.initialize()
            return await use(client)
        finally:
            await client.close()

    return asyncio.run(run())


def history(home: Path, session_id: str) -> list[dict[str, Any]]:
    return with_sidecar(home, lambda client: client.history(session_id))


def stored_sessions(home: Path) -> list[str]:
    async def ids(client: ThreadlineClient) -> list[str]:
        return [str(s["sessionId"]) for s in await client.list_sessions()]

    return with_sidecar(home, ids)


def text_of(message: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")
