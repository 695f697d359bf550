"""Which session store a sidecar opens: SQLite in the data folder by default, or a
PostgreSQL database a team shares (``THREADLINE_STORE`` / ``store =`` in the config)."""

from __future__ import annotations

from pathlib import Path

from .base import SessionStore, StoreError

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(url: str) -> bool:
    return url.startswith(POSTGRES_SCHEMES)


def describe_store(db_path: Path, url: str | None) -> str:
    """Where sessions live, for logs and people: never a password."""
    if url is None:
        return str(db_path)
    from .postgres import describe

    return "postgresql://" + describe(url)


def open_store(db_path: Path, url: str | None) -> SessionStore:
    """Open the configured store; `StoreError` with a one-line reason if it cannot be."""
    if url is None:
        from .sqlite import EventStore

        return EventStore(db_path)
    if not is_postgres(url):
        raise StoreError(
            "THREADLINE_STORE (or store = in threadline.toml) must be a postgresql:// URL; "
            "leave it unset for SQLite in THREADLINE_HOME"
        )
    from .postgres import PostgresStore

    return PostgresStore(url)
