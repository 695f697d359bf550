"""``threadline models`` (run as ``python -m threadline.models_cmd`` until the CLI wires it)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.providers.fault_server import FaultServer

KEY = "sk-models-cmd-0123456789SECRET"


def run(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(THREADLINE_CONFIG=str(config), FAULT_API_KEY=KEY)
    return subprocess.run(
        [sys.executable, "-m", "threadline.models_cmd", *args],
        env=env,
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
