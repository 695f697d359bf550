"""The Python client's way into a working session: steer, queue, list, remove, resume."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from threadline_client import ThreadlineClient

pytestmark = pytest.mark.timeout(60)


def slow(words: int) -> str:
    steps: list[dict[str, Any]] = [{"echo": True}]
    for i in range(words):
        steps += [{"text": f"w{i} "}, {"sleep": 0.03}]
    return "scripted:" + json.dumps({"rounds": [steps]})


async def test_the_python_client_queues_lists_removes_and_resumes(home: Path) -> None:
    client = await ThreadlineClient.spawn(
        env={"THREADLINE_HOME": str(home)}, stderr=subprocess.DEVNULL
    )
    try:
        await client.initialize()
        sid = await client.new_session("/tmp", model=slow(30), builtinTools=False)
        first = asyncio.create_task(client.prompt(sid, "one"))
        await asyncio.sleep(0.3)
        second = asyncio.create_task(client.prompt(sid, "two", while_running="queue"))
        third = asyncio.create_task(client.prompt(sid, "three", while_running="queue"))
        for _ in range(100):
            if len(await client.queue(sid)) == 2:
                break
            await asyncio.sleep(0.05)
        queued = await client.queue(sid)
        assert [q["prompt"][0]["text"] for q in queued] == ["two", "three"]
        assert await client.remove_queued(sid, queued[1]["id"]) == [queued[1]["id"]]
        assert (await third)["_meta"]["threadline"]["queue"] == "removed"
        await client.interrupt(sid)
        assert (await first)["stopReason"] == "cancelled"
        assert (await second)["_meta"]["threadline"]["queue"] == "held"
        assert await client.resume_queue(sid) == [queued[0]["id"]]
        for _ in range(200):
            users = [m for m in await client.history(sid) if m["role"] == "user"]
            if len(users) == 2 and not await client.queue(sid):
                break
            await asyncio.sleep(0.05)
        assert [m["messageId"] for m in users][1:] == [queued[0]["id"]]
    finally:
        await client.close()
