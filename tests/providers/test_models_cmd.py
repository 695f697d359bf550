"""``threadline models``, run as a person runs it (``python -m threadline models``)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.providers.fault_server import FaultServer

KEY = "sk-models-cmd-0123456789SECRET"


def run(
    config: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    environ.update(THREADLINE_CONFIG=str(config), FAULT_API_KEY=KEY, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "threadline", "models", *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=90,
    )


def test_lists_models_with_reachability_and_no_secrets(
    isolated_config: Path, fault: FaultServer
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    isolated_config.write_text(
        f'default_model = "good"\n'
        f'[providers.fault]\ntype = "openai"\nbase_url = "{fault.base_url}"\n'
        f'[providers.gone]\ntype = "openai"\nbase_url = "http://127.0.0.1:{closed}/v1"\n'
        '[models.good]\nprovider = "fault"\nmodel = "fault-model"\nname = "Good"\n'
        '[models.bad]\nprovider = "gone"\nmodel = "x"\n'
    )
    done = run(isolated_config, "--json", "--timeout", "5")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rows = {r["model"]: r for r in report["models"]}
    assert set(rows) == {"local:smollm2-135m", "good", "bad"}
    assert rows["good"]["reachable"] is True and rows["good"]["default"] is True
    assert rows["good"]["key"] == "$FAULT_API_KEY"
    assert rows["bad"]["reachable"] is False
    assert rows["local:smollm2-135m"]["reachable"] is True
    assert fault.requests[0].headers["authorization"] == f"Bearer {KEY}"

    table = run(isolated_config)
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["MODEL", "PROVIDER", "ENDPOINT", "KEY", "STATUS"]
    assert any(line.startswith("good *") and "reachable: model listed" in line for line in lines)
    assert any(line.startswith("bad ") and "unreachable" in line for line in lines)
    assert KEY not in done.stdout + done.stderr + table.stdout + table.stderr


def test_a_broken_config_is_reported(isolated_config: Path) -> None:
    isolated_config.write_text("[models.m]\nprovider = 'nobody'\nmodel = 'x'\n")
    done = run(isolated_config, "--no-check")
    assert done.returncode == 2 and "unknown provider 'nobody'" in done.stderr


def test_shows_what_was_learned_about_a_server(
    isolated_config: Path, fault: FaultServer, tmp_path: Path
) -> None:
    from threadline.providers.traits import TraitStore, server_key

    home = tmp_path / "home"
    TraitStore(home / "servers.json").update(
        server_key(fault.base_url, "fault-model"), stream_tools=False, tool_messages=False
    )
    isolated_config.write_text(
        f'[providers.fault]\ntype = "openai"\nbase_url = "{fault.base_url}"\n'
        '[models.good]\nprovider = "fault"\nmodel = "fault-model"\n'
    )
    env = {"THREADLINE_HOME": str(home)}
    table = run(isolated_config, "--no-check", env=env)
    assert table.returncode == 0, table.stderr
    [line] = [line for line in table.stdout.splitlines() if line.startswith("good")]
    assert "tool calls not streamed; tool results as user messages" in line
    report = json.loads(run(isolated_config, "--no-check", "--json", env=env).stdout)
    rows = {r["model"]: r for r in report["models"]}
    assert rows["good"]["learned"] == "tool calls not streamed; tool results as user messages"
    assert rows["local:smollm2-135m"]["learned"] == ""
