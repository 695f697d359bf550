"""``threadline desktop``'s server: the gate (Host, Origin, token) and the bridge to a
real ``threadline serve``, with a real WebSocket client. The page itself is tested in
Chromium by ``editors/desktop`` (npm test)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

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


async def test_a_sidecar_that_exits_closes_the_page_socket_at_once(tmp_path: Path) -> None:
    """The page hears of a lost sidecar when it happens, with why, not at its next send."""
    dies = [sys.executable, "-c", "import sys; sys.stdin.readline(); sys.exit(3)"]
    server, gate = await desktop.start(0, dies, tmp_path)
    async with server:
        uri = f"ws://127.0.0.1:{gate.port}/rpc?token={gate.token}"
        async with connect(uri, origin=f"http://127.0.0.1:{gate.port}") as ws:  # type: ignore[arg-type]
            await ws.send('{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}')
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 10)
            assert closed.value.rcvd is not None
            assert closed.value.rcvd.code == 1011
            assert closed.value.rcvd.reason == "the sidecar exited (code 3)"


def run_desktop(*args: str, static: Path | None = None) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys; from threadline_client import desktop; from pathlib import Path\n"
        "if len(sys.argv) > 1 and sys.argv[1] == '--static':\n"
        "    desktop.STATIC = Path(sys.argv[2]); del sys.argv[1:3]\n"
        "import argparse; p = argparse.ArgumentParser(); desktop.add_arguments(p)\n"
        "sys.exit(desktop.run(p.parse_args(sys.argv[1:])))\n"
    )
    extra = ["--static", str(static)] if static is not None else []
    return subprocess.run(
        [sys.executable, "-c", code, *extra, "--no-browser", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_an_unbuilt_page_is_said_before_any_address(tmp_path: Path) -> None:
    result = run_desktop(static=tmp_path / "nothing-built")
    assert result.returncode == 2
    assert "Threadline desktop: http" not in result.stdout
    hint = desktop.BUILD_HINT
    assert result.stderr == f"threadline desktop: the page is not built; run: {hint}\n"


def test_a_busy_port_is_said_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<p>page</p>")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_desktop("--port", str(port), static=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"threadline desktop: cannot listen on 127.0.0.1:{port}: ")
    assert "pick another --port" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1
