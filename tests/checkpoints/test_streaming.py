"""A checkpoint never holds up streaming: while one session's first checkpoint reads
a large workspace (git in a worker thread), another session of the same sidecar goes
on streaming its answer. Real ``threadline serve``, real git."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
from pathlib import Path

import pytest

from tests.checkpoints.helpers import acting, changing_session
from tests.support import SidecarClient, scripted

pytestmark = pytest.mark.timeout(180)


def chunks(client: SidecarClient, sid: str) -> int:
    return sum(
        1
        for u in client.updates
        if u["sessionId"] == sid and u["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def checkpointing(home: Path) -> bool:
    """Whether a checkpoint runs now: its shadow repository's lock is held."""
    for lock in home.glob("checkpoints/*/lock"):
        with open(lock, "a+b") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
    return False


async def test_another_session_streams_while_a_checkpoint_reads_the_workspace(
    sidecar: SidecarClient, home: Path, tmp_path: Path
) -> None:
    big = tmp_path / "big"
    for i in range(2000):  # about 50 MB: its first checkpoint reads every byte
        folder = big / f"d{i // 100:02}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:04}.txt").write_text(f"file {i}\n" + "x" * 25_000)
    acting(sidecar, [lambda: (big / "new.txt").write_text("new\n")])
    changer = await changing_session(sidecar, big)
    words = [step for i in range(400) for step in ({"text": f"w{i} "}, {"sleep": 0.02})]
    talker = await sidecar.new_session(model=scripted(words), builtinTools=False)

    talking = asyncio.ensure_future(sidecar.prompt(talker, "talk"))
    await sidecar.wait_update(
        lambda u: u["sessionId"] == talker and u["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    changing = asyncio.ensure_future(sidecar.prompt(changer, "change"))
    seen: list[int] = []  # the talker's chunk count at each look during the checkpoint
    try:
        for _ in range(3000):
            if checkpointing(home):
                seen.append(chunks(sidecar, talker))
            elif seen or changing.done():
                break
            await asyncio.sleep(0.01)
        assert len(seen) >= 2, "no checkpoint was seen running"
        assert seen[-1] > seen[0], "the other session's answer stopped during a checkpoint"
        assert (await changing)["stopReason"] == "end_turn"
        assert (await talking)["stopReason"] == "end_turn"
    finally:
        for task in (talking, changing):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
