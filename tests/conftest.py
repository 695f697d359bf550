"""Fixtures shared by every suite: a fresh data folder and a running sidecar per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support import RawSidecar, SidecarClient, start_sidecar


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "threadline-home"


@pytest.fixture
async def sidecar(home: Path) -> AsyncIterator[SidecarClient]:
    client = await start_sidecar(home)
    try:
        yield client
    finally:
        await client.stop()


@pytest.fixture
async def raw(home: Path) -> AsyncIterator[RawSidecar]:
    side = await RawSidecar.start(home)
    try:
        yield side
    finally:
        await side.close()
