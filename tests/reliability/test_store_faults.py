"""The disk under the store misbehaves: it fills up mid-answer, or a cleanup tool
deletes the write-ahead log while the sidecar runs. Each test is named after the
fault an outside probe found (issue 13, items 2 and 3)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support import SERVER_COMMAND, SidecarClient, scripted, sidecar_env, start_sidecar

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 6 MiB filesystem of its own (tmpfs), so filling it harms nothing else."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path, leave: int = 0) -> Path:
    """Fill the filesystem until only ``leave`` bytes are free (0: until ENOSPC)."""
    filler = folder / f"filler-{len(list(folder.glob('filler-*')))}"
    block = b"\0" * 65536
    with open(filler, "wb", buffering=0) as f:
        while True:
            free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
            if free <= leave:
                break
            try:
                f.write(block[: max(1, min(len(block), free - leave))])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    return filler


def long_answer(n: int = 400) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for i in range(n):
        steps += [{"text": f"line {i:04d} " + "x" * 80 + "\n"}, {"sleep": 0.01}]
    return steps


async def history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


async def test_disk_full_mid_stream_keeps_what_the_user_saw(small_disk: Path) -> None:
    home = small_disk / "home"
    client = await start_sidecar(home)
    try:
        sid = await client.new_session(model=scripted(long_answer()), builtinTools=False)
        prompt = asyncio.create_task(client.prompt(sid, "write a lot", timeout=120))
        for _ in range(500):
            if len(client.text_of(sid)) > 2000:
                break
            await asyncio.sleep(0.02)
        filler = fill(small_disk)
        with pytest.raises(JsonRpcException) as err:
            await prompt
        assert err.value.code == -32014
        assert "disk full" in str(err.value) and str(home) in str(err.value)
        assert err.value.data["reason"] == "disk_full"  # type: ignore[index]
        seen = client.text_of(sid)
        assert len(seen) > 2000
        # Prompted again before any restart, on a disk still full: the same clear
        # error, and the journal of what was shown is kept.
        with pytest.raises(JsonRpcException) as again:
            await client.prompt(sid, "again")
        assert again.value.code == -32014
        # Space comes back: the next prompt first stores the cut answer, then runs.
        filler.unlink()
        assert (await client.prompt(sid, "again"))["stopReason"] == "end_turn"
        msgs = await history(client, sid)
        cut = next(m for m in msgs if m["role"] == "assistant")
        assert cut["truncated"] is True
        stored = "".join(b["text"] for b in cut["content"] if b["type"] == "text")
        assert stored.startswith(seen), "every character the user saw is stored"
        assert b"--- Logging error ---" not in client.stderr
        assert b"Traceback" not in client.stderr, client.stderr.decode()[-3000:]
    finally:
        await client.stop()


async def test_a_fresh_start_on_a_full_disk_says_disk_full(small_disk: Path) -> None:
    home = small_disk / "home"
    home.mkdir()
    (home / "logs").mkdir()
    fill(small_disk)
    proc = await asyncio.create_subprocess_exec(
        *SERVER_COMMAND,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=sidecar_env(home),
    )
    _, stderr = await asyncio.wait_for(proc.communicate(b""), 60)
    text = stderr.decode()
    assert proc.returncode != 0
    assert "disk full" in text and str(home) in text
    assert "Move the file aside" not in text


async def test_wal_deleted_while_running_loses_no_acknowledged_commit(home: Path) -> None:
    client = await start_sidecar(home)
    sids: list[str] = []
    try:
        for i in range(2):
            sid = await client.new_session(model=scripted([{"text": f"answer {i}"}]))
            await client.prompt(sid, f"question {i}")
            sids.append(sid)
            wal = home / "threadline.db-wal"
            if i == 0:
                assert wal.exists()
                wal.unlink()  # a cleanup tool, a sync client
        assert client._server is not None
        os.kill(client._server.pid, signal.SIGKILL)
        await client._server.wait()
        stderr = bytes(client.stderr)
    finally:
        with contextlib.suppress(Exception):
            await client.stop()
    assert b"write-ahead log" in stderr and b"deleted" in stderr
    again = await start_sidecar(home)
    try:
        for i, sid in enumerate(sids):
            msgs = await history(again, sid)
            texts = ["".join(b.get("text", "") for b in m["content"]) for m in msgs]
            assert texts == [f"question {i}", f"answer {i}"], "both sessions survived"
    finally:
        await again.stop()
