"""Sessions on PostgreSQL across machines: sidecars with different host names (so
neither can check the other's pid, as on two machines) and different data folders,
sharing one database."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.pgserver import PASSWORD, PgServer
from tests.reliability.test_many_sidecars import FULL_TEXT, history, new, slow_answer, texts
from tests.reliability.test_many_sidecars import wait_text as wait_streamed
from tests.support import (
    SERVER_COMMAND,
    SidecarClient,
    count_rows,
    scripted,
    sidecar_env,
    start_sidecar,
)

pytestmark = pytest.mark.timeout(180)

TTL = 4.0


async def machine(root: Path, host: str, url: str) -> SidecarClient:
    return await start_sidecar(
        root / host,
        env={"THREADLINE_STORE": url, "THREADLINE_HOST": host, "THREADLINE_LEASE_TTL": str(TTL)},
    )


@pytest.fixture
async def two_machines(
    tmp_path: Path, pg_url: str
) -> AsyncIterator[tuple[SidecarClient, SidecarClient]]:
    """A laptop and a dev box: two sidecars, two homes, one PostgreSQL store."""
    laptop = await machine(tmp_path, "laptop", pg_url)
    devbox = await machine(tmp_path, "devbox", pg_url)
    try:
        yield laptop, devbox
    finally:
        await laptop.stop()
        await devbox.stop()


async def test_a_turn_on_the_laptop_streams_live_on_the_dev_box(
    two_machines: tuple[SidecarClient, SidecarClient],
) -> None:
    laptop, devbox = two_machines
    sid = await new(laptop, scripted(slow_answer()))
    await laptop.prompt(sid, "first")
    running = asyncio.create_task(laptop.prompt(sid, "second"))
    await wait_streamed(laptop, sid, len(FULL_TEXT) + 20)
    await devbox.call("session/load", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
    result = await running
    assert result["stopReason"] == "end_turn"
    message_id = result["_meta"]["threadline"]["messageId"]
    for _ in range(200):
        if devbox.text_of(sid, message_id) == FULL_TEXT:
            break
        await asyncio.sleep(0.05)
    assert devbox.text_of(sid, message_id) == FULL_TEXT, "the dev box saw the turn whole"
    assert texts(await history(devbox, sid)) == [FULL_TEXT, FULL_TEXT]
    # ... and goes on with it there; the laptop sees the dev box's turn.
    assert (await devbox.prompt(sid, "third"))["stopReason"] == "end_turn"
    assert len(texts(await history(laptop, sid))) == 3


async def test_a_lost_machines_turn_is_taken_over_once_its_heartbeat_is_stale(
    tmp_path: Path, pg_url: str, two_machines: tuple[SidecarClient, SidecarClient]
) -> None:
    laptop, devbox = two_machines
    sid = await new(laptop, scripted(slow_answer()))
    orphan = asyncio.create_task(laptop.prompt(sid, "stream"))
    seen = await wait_streamed(laptop, sid, 20)
    assert laptop._server is not None
    os.kill(laptop._server.pid, signal.SIGKILL)  # the laptop is gone mid-answer
    await laptop._server.wait()
    killed = time.monotonic()
    # Its pid cannot be checked from another host: the lease holds until it is stale.
    with pytest.raises(JsonRpcException) as err:
        await devbox.prompt(sid, "too early")
    assert err.value.code == -32010
    assert err.value.data["owner"]["host"] == "laptop"  # type: ignore[index]
    while True:
        try:
            result = await devbox.prompt(sid, "taking over")
            break
        except JsonRpcException as exc:
            assert exc.code == -32010, exc
            assert time.monotonic() - killed < TTL + 20, "never taken over"
            await asyncio.sleep(0.3)
    assert time.monotonic() - killed >= TTL - 1.0, "taken over before the lease expired"
    assert result["stopReason"] == "end_turn"
    msgs = await history(devbox, sid)
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant"]
    assert msgs[1]["truncated"] is True
    assert texts(msgs)[0].startswith(seen), "what the laptop's user saw survives"
    assert count_rows(tmp_path, pg_url, "inflight") == 0
    orphan.cancel()


def test_an_unreachable_store_is_one_line_and_exit_2_without_the_password(
    tmp_path: Path,
) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = sidecar_env(tmp_path / "home")
    env["THREADLINE_STORE"] = f"postgresql://team:{PASSWORD}@127.0.0.1:{port}/sessions"
    started = time.monotonic()
    done = subprocess.run(
        SERVER_COMMAND, env=env, input=b"", capture_output=True, timeout=30, check=False
    )
    assert time.monotonic() - started < 5 + 3, "interpreter start-up plus the 3 s connect bound"
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.count("\n") == 1 and f"127.0.0.1:{port}" in err and "team@" in err, err
    assert PASSWORD not in err and not done.stdout
    log = (tmp_path / "home" / "logs" / "threadline.log").read_text()
    assert PASSWORD not in log


async def test_store_in_the_config_file_selects_postgresql(tmp_path: Path, pg_url: str) -> None:
    config = tmp_path / "threadline.toml"
    config.write_text(f'store = "{pg_url}"\n')
    env = {"THREADLINE_CONFIG": str(config)}
    client = await start_sidecar(tmp_path / "home", env=env)
    try:
        sid = await new(client, scripted([{"text": "hi"}]))
        await client.prompt(sid, "hello")
    finally:
        await client.stop()
    assert count_rows(tmp_path, pg_url, "events", sid) > 0
    assert not (tmp_path / "home" / "threadline.db").exists(), "nothing went to SQLite"
    listed = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "threadline", "models", "--json"],
        env={**sidecar_env(tmp_path / "home"), **env},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert PASSWORD not in listed.stdout.decode() + listed.stderr.decode()
    log = (tmp_path / "home" / "logs" / "threadline.log").read_text()
    assert PASSWORD not in log
    # The log's URL filter masks any userinfo, the user name too.
    assert re.search(r"sessions: postgresql://(threadline|\*\*\*)@127\.0\.0\.1", log), log


@pytest.mark.realpart("postgresql")
async def test_a_turn_streams_on_through_a_short_outage_and_is_stored_whole(
    tmp_path: Path,
) -> None:
    """The database goes away mid-answer and comes back: the client keeps getting the
    answer, the journal text waits in memory, and the whole answer is stored."""
    server = PgServer()
    try:
        url = server.new_database()
        client = await start_sidecar(
            tmp_path / "home", env={"THREADLINE_STORE": url, "THREADLINE_STORE_RETRY": "20"}
        )
        try:
            sid = await new(client, scripted(slow_answer(80, 0.04)))
            running = asyncio.create_task(client.prompt(sid, "stream"))
            await wait_streamed(client, sid, 30)
            await asyncio.to_thread(server.stop)
            during = len(client.text_of(sid))
            await asyncio.sleep(1.0)
            assert len(client.text_of(sid)) > during, "the answer kept streaming"
            await asyncio.to_thread(server.start)
            result = await asyncio.wait_for(running, 60)
            assert result["stopReason"] == "end_turn"
            full = "".join(f"w{i} " for i in range(80))
            assert client.text_of(sid) == full
            assert texts(await history(client, sid)) == [full]
            assert count_rows(tmp_path, url, "inflight") == 0
            log = client.stderr.decode("utf-8", "replace")
            assert "journal chunks wait in memory" in log, "the outage was not met"
            assert PASSWORD not in log
        finally:
            await client.stop()
    finally:
        server.close()
