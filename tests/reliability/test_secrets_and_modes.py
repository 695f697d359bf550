"""Secrets never reach the store, the logs or the client; the data folder is private.

The secrets are real ones as far as the sidecar knows: API keys read from the
environment and sent to a loopback OpenAI-compatible server (the test checks they
arrived there, so they were in the sidecar's memory), and the ``env`` of MCP servers.
A hostile upstream even echoes the key back in its error message. Then every byte
the sidecar left behind is searched: the SQLite file, its WAL and shared memory, the
log folder, stderr, and every notification and answer the client received.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.providers.fault_server import FaultServer, ok, status
from tests.reliability.figures import record
from tests.support import scripted, start_sidecar
from tests.tools.fakes import echo_server_entry


@pytest.fixture
def fault() -> Iterator[FaultServer]:
    server = FaultServer(default=ok("Hello", " there."))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def search(haystacks: dict[str, bytes], needles: dict[str, str]) -> list[str]:
    found = []
    for where, data in haystacks.items():
        for name, secret in needles.items():
            if secret.encode() in data:
                found.append(f"{name} found in {where}")
    return found


@pytest.mark.timeout(120)
async def test_api_keys_and_mcp_env_never_reach_store_logs_or_client(
    fault: FaultServer, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    needles = {
        "OpenAI key": "sk-test-SECRET-" + secrets.token_hex(12),
        "other provider key": "corp-token-SECRET-" + secrets.token_hex(12),
        "MCP env value": "mcp-SECRET-" + secrets.token_hex(12),
    }
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "THREADLINE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    config = tmp_path / "threadline.toml"
    config.write_text(
        f'[providers.openai]\nbase_url = "{fault.base_url}"\n\n'
        "[providers.openai.policies]\nretries = 0\n\n"
        f'[providers.corp]\ntype = "openai"\nbase_url = "{fault.base_url}"\n'
        'api_key_env = "CORP_TOKEN"\n\n[providers.corp.policies]\nretries = 0\n'
    )
    monkeypatch.setenv("THREADLINE_CONFIG", str(config))
    monkeypatch.setenv("OPENAI_API_KEY", needles["OpenAI key"])
    monkeypatch.setenv("CORP_TOKEN", needles["other provider key"])
    monkeypatch.setenv("THREADLINE_LOG_LEVEL", "DEBUG")

    seen: list[Any] = []
    client = await start_sidecar(home)
    try:
        for model, key in (
            ("openai:fault-model", needles["OpenAI key"]),
            ("corp:fault-model", needles["other provider key"]),
        ):
            sid = await client.new_session(model=model, builtinTools=False)
            seen.append(await client.prompt(sid, "hello"))
            # A hostile or careless upstream echoes the key in its error.
            fault.push(status(401, f"Incorrect API key provided: {key}. Check it."))
            with pytest.raises(JsonRpcException) as info:
                await client.prompt(sid, "again")
            seen.append([info.value.code, str(info.value), info.value.data])
            seen.append(await client.call("session/fork", {"sessionId": sid}))
            seen.append(await client.call("session/history", {"sessionId": sid}))

        mcp_secret = needles["MCP env value"]
        broken = {**echo_server_entry("broken"), "command": "/nonexistent/threadline-test-cmd"}
        broken["env"] = [{"name": "API_TOKEN", "value": mcp_secret}]
        params = {
            "cwd": str(tmp_path),
            "mcpServers": [echo_server_entry(API_TOKEN=mcp_secret), broken],
            "_meta": {
                "threadline": {
                    "model": scripted(
                        [{"tool_call": {"name": "echo__echo", "arguments": {"text": "hi"}}}],
                        [{"text": "done"}],
                    )
                }
            },
        }
        created = await client.call("session/new", params, timeout=60)
        seen.append(created)
        assert "broken" in json.dumps(created.get("_meta", {})), "the broken server is reported"
        seen.append(await client.prompt(created["sessionId"], "echo"))
        seen.append(await client.call("session/list", {}))
        seen.append(await client.call("session/history", {"sessionId": created["sessionId"]}))
        seen.append(client.updates)
        seen.append(client.server_requests)
        running = {  # the WAL and shared memory exist only while the sidecar runs
            f"{p.name} (running)": p.read_bytes() for p in home.glob("threadline.db*")
        }
    finally:
        await client.stop()

    sent = [r.headers.get("authorization", "") for r in fault.chat_requests()]
    assert (
        f"Bearer {needles['OpenAI key']}" in sent
        and f"Bearer {needles['other provider key']}" in sent
    )
    haystacks = {str(p.relative_to(home)): p.read_bytes() for p in home.rglob("*") if p.is_file()}
    assert "threadline.db" in haystacks and any(k.startswith("logs") for k in haystacks)
    haystacks.update(running)
    assert "threadline.db-wal (running)" in haystacks
    haystacks["stderr"] = bytes(client.stderr)
    haystacks["client messages"] = json.dumps(seen, default=str).encode()
    assert b"Incorrect API key provided" in haystacks["client messages"], "echo not exercised"
    leaks = search(haystacks, needles)
    record("secrets", secrets=len(needles), places_searched=sorted(haystacks), leaks=leaks)
    assert leaks == []


async def _modes(home: Path) -> dict[str, int]:
    return {
        str(p.relative_to(home.parent)): stat.S_IMODE(p.stat().st_mode)
        for p in [home, *home.rglob("*")]
    }


@pytest.mark.parametrize("loose_before", [False, True], ids=["fresh", "loose-existing"])
async def test_data_folder_is_0700_and_every_file_in_it_0600(
    loose_before: bool, home: Path
) -> None:
    if loose_before:  # a folder and store someone created with a permissive umask
        home.mkdir(mode=0o755)
        os.chmod(home, 0o755)
        (home / "threadline.db").touch()
        os.chmod(home / "threadline.db", 0o644)
    old = os.umask(0o022)
    try:
        client = await start_sidecar(home)
    finally:
        os.umask(old)
    try:
        sid = await client.new_session(model=scripted([{"text": "hi"}]))
        await client.prompt(sid, "write something")
        running = await _modes(home)
    finally:
        await client.stop()
    stopped = await _modes(home)
    for modes in (running, stopped):
        for path, mode in modes.items():
            is_dir = path in ("threadline-home", "threadline-home/logs")
            want = 0o700 if is_dir else 0o600
            assert mode == want, f"{path} is {oct(mode)}, not {oct(want)}: {modes}"
    assert any(p.endswith("-wal") for p in running), "the WAL was checked while running"
