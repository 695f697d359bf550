"""``threadline desktop``'s server: the gate (Host, Origin, token) and the bridge to a
real ``threadline serve``, with a real WebSocket client. The page itself is tested in
Chromium by ``editors/desktop`` (npm test)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from threadline_client import desktop


@pytest.fixture
def sidecar_env(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THREADLINE_HOME", str(home))


async def test_bridge_speaks_json_rpc_to_a_real_sidecar(sidecar_env: None, tmp_path: Path) -> None:
    server, gate = await desktop.start(0, [sys.executable, "-m", "threadline", "serve"], tmp_path)
    async with server:
        uri = f"ws://127.0.0.1:{gate.port}/rpc?token={gate.token}"
        origin = f"http://127.0.0.1:{gate.port}"
        async with connect(uri, origin=origin) as ws:  # type: ignore[arg-type]
            await ws.send(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {"protocolVersion": 1},
                    }
                )
            )
            answer = json.loads(await ws.recv(decode=True))
            assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1


@pytest.mark.parametrize(
    ("origin", "token", "host_ok"),
    [
        ("http://evil.example", True, True),  # another web page
        (None, False, True),  # the right origin, no token
        (None, True, False),  # DNS rebinding: a foreign Host header
    ],
)
async def test_gate_refuses_other_origins_wrong_tokens_and_foreign_hosts(
    sidecar_env: None, tmp_path: Path, origin: str | None, token: bool, host_ok: bool
) -> None:
    server, gate = await desktop.start(0, [sys.executable, "-m", "threadline", "serve"], tmp_path)
    async with server:
        uri = f"ws://127.0.0.1:{gate.port}/rpc?token={gate.token if token else 'guess'}"
        headers = None if host_ok else {"Host": "evil.example"}
        with pytest.raises(InvalidStatus) as refused:
            async with connect(
                uri,
                origin=origin or f"http://127.0.0.1:{gate.port}",  # type: ignore[arg-type]
                additional_headers=headers,
            ):
                pass
        assert refused.value.response.status_code == 403


async def test_each_launch_has_its_own_long_token(tmp_path: Path) -> None:
    tokens: list[str] = []
    for _ in range(2):
        server, gate = await desktop.start(0, ["true"], tmp_path)
        async with server:
            tokens.append(gate.token)
    assert tokens[0] != tokens[1]
    assert all(len(t) >= 40 for t in tokens)
