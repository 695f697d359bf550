"""``threadline store migrate --from sqlite --to postgresql://…`` as a user runs it: sessions
made by a real sidecar on SQLite, copied, then opened by a sidecar on PostgreSQL."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.pgserver import PASSWORD
from tests.support import scripted, sidecar_env, start_sidecar

pytestmark = pytest.mark.timeout(240)


async def histories(home: Path, sids: list[str], env: dict[str, str]) -> dict[str, Any]:
    client = await start_sidecar(home, env=env)
    try:
        out: dict[str, Any] = {}
        for sid in sids:
            out[sid] = (await client.call("session/history", {"sessionId": sid}))["messages"]
        listed = await client.call("session/list", {})
        out["_list"] = sorted(s["sessionId"] for s in listed["sessions"])
        return out
    finally:
        await client.stop()


def migrate(home: Path, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "threadline", "store", "migrate", "--from", "sqlite", "--to", url],
        env=sidecar_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_migrate_copies_sessions_and_forks_and_is_idempotent(
    tmp_path: Path, pg_url: str
) -> None:
    home = tmp_path / "home"
    client = await start_sidecar(home)
    try:
        model = scripted([{"text": "first answer"}], [{"text": "second answer"}])
        parent = await client.new_session(model=model, builtinTools=False)
        await client.prompt(parent, "one")
        await client.prompt(parent, "two")
        fork = (await client.call("session/fork", {"sessionId": parent}))["sessionId"]
        await client.call(
            "session/set_config_option",
            {"sessionId": fork, "configId": "model", "value": scripted([{"text": "forked"}])},
        )
        await client.prompt(fork, "three")
        gone = await client.new_session(model=model, builtinTools=False)
        await client.prompt(gone, "bye")
        # The fork's parent is deleted: its rows stay, as the fork's base.
        await client.call("session/delete", {"sessionId": parent})
        await client.call("session/delete", {"sessionId": gone})
        kept = await client.new_session(model=model, builtinTools=False)
        await client.prompt(kept, "stay")
    finally:
        await client.stop()
    before = await histories(home, [fork, kept], {})

    done = await asyncio.to_thread(migrate, home, pg_url)
    assert done.returncode == 0, done.stderr
    assert "copying sessions" in done.stderr
    assert "3 sessions checked" in done.stderr and "3 copied" in done.stderr, done.stderr
    assert PASSWORD not in done.stderr + done.stdout

    again = await asyncio.to_thread(migrate, home, pg_url)
    assert again.returncode == 0 and "3 already there" in again.stderr, again.stderr

    after = await histories(tmp_path / "elsewhere", [fork, kept], {"THREADLINE_STORE": pg_url})
    assert after == before
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT base_id, deleted FROM tl_sessions WHERE id=%s", (fork,))
        assert row.fetchone() == (parent, False), "the fork is still one row on its base"
        base = conn.execute("SELECT deleted FROM tl_sessions WHERE id=%s", (parent,)).fetchone()
        assert base == (True,)


def test_migrate_to_an_unreachable_server_fails_cleanly(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    missing = migrate(home, f"postgresql://u:{PASSWORD}@127.0.0.1:1/db")
    assert missing.returncode == 2 and "no SQLite session store" in missing.stderr
