"""Fixtures for provider tests: loopback servers (fault-injecting, Anthropic replay,
real llama_cpp.server) and helpers that drain a provider's stream under a timeout."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.anthropic_replay import AnthropicReplay
from tests.providers.fault_server import FaultServer


@pytest.fixture
def fault() -> Iterator[FaultServer]:
    server = FaultServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def replay() -> Iterator[AnthropicReplay]:
    server = AnthropicReplay().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config path of this test's own; provider env vars of the machine removed."""
    for var in (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_KEY",
        "THREADLINE_MODEL",
    ):
        monkeypatch.delenv(var, raising=False)
    path = tmp_path / "threadline.toml"
    monkeypatch.setenv("THREADLINE_CONFIG", str(path))
    return path
