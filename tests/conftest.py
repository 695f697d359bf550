"""Fixtures shared by every suite: a fresh data folder and a running sidecar per test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support import RawSidecar, SidecarClient, start_sidecar

# The real parts (PostgreSQL, tmux, Neovim…): found, installed when missing or named in
# one line, and listed at the end of the run. See docs/testing.md.
pytest_plugins = ["tests.realparts"]

if TYPE_CHECKING:
    from tests.pgserver import PgServer


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


@pytest.fixture(autouse=True, scope="session")
def _no_outside_store() -> Iterator[None]:
    """A developer's ``THREADLINE_STORE`` (their team's sessions) never reaches the
    sidecars tests start; tests that want PostgreSQL set it to their own database."""
    saved = os.environ.pop("THREADLINE_STORE", None)
    yield
    if saved is not None:
        os.environ["THREADLINE_STORE"] = saved


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL server per test session (per xdist worker); each test that needs
    it gets its own database from `pg_url`."""
    # Imported here: the plugin module it uses loads first, as a plugin.
    from tests.pgserver import PgServer

    server = PgServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    return pg_server.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    """Which session store a test runs on; ``postgresql`` starts the shared server."""
    return str(request.param)


@pytest.fixture
def store_url(backend: str, request: pytest.FixtureRequest) -> str | None:
    """``THREADLINE_STORE`` for the parametrized backend (None: SQLite in the home)."""
    if backend == "sqlite":
        return None
    return str(request.getfixturevalue("pg_url"))
