"""The store fixture both store suites (``test_store``, ``test_store_search``) use."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from threadline.store.base import SessionStore
from threadline.store.sqlite import EventStore

Opener = Callable[[], SessionStore]


@pytest.fixture
def open_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Opener]:
    """Opens a store on one location (a SQLite file or a fresh PostgreSQL database);
    each call is another connection, as another process would have."""
    opened: list[SessionStore] = []
    if backend == "sqlite":
        path = tmp_path / "db.sqlite"

        def open_one() -> SessionStore:
            opened.append(EventStore(path))
            return opened[-1]
    else:
        from threadline.store.postgres import PostgresStore

        url = str(request.getfixturevalue("pg_url"))

        def open_one() -> SessionStore:
            opened.append(PostgresStore(url))
            return opened[-1]

    yield open_one
    for store in opened:
        store.close()
