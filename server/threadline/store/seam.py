"""The seam between the operations written once and the backend that runs them.

`store.sql.SqlStore` is assembled from one class per part of the contract (sessions
and forks, the event log, the stream journal, leases); each is written against this
base, and a backend (`store.sqlite`, `store.postgres`) fills in how a piece of work
runs on its connections.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TypeVar

from .base import StoreError
from .rows import BASE_COLS, COLS
from .statements import Dialect, Statements

T = TypeVar("T")


class SqlBase(ABC):
    """How a piece of work runs on a backend; the operations build on it."""

    dialect: Dialect
    keeps_folds: bool = True
    """Whether this connection may use the folds table (a role with privileges on the
    older tables only may not: then folds are neither read, written nor deleted)."""
    keeps_replay: bool = True
    """Whether the folds table has its ``replay`` column (a role that may not upgrade an
    older PostgreSQL schema keeps folds without their replay)."""
    catalog: bool = True
    """Whether the schema has the catalog (archive, tags, previews, the search index):
    a role that may not upgrade an older PostgreSQL schema works without it."""

    journal_window: float = 0.0
    """`store.base.SessionStore.journal_window`: none by default (writes in process)."""

    @property
    def _cols(self) -> str:
        """The ``sessions`` columns a row is read from (`rows.session_row`)."""
        return COLS if self.catalog else BASE_COLS

    def _need_catalog(self) -> None:
        if not self.catalog:
            raise StoreError(
                "this store's schema predates search, archive and tags, and this role may "
                "not upgrade it; the next sidecar of the tables' owner does (docs/teams.md)"
            )

    @abstractmethod
    def _read(self, work: Callable[[Statements], T]) -> T:
        """Reads that need no common snapshot (each statement sees the latest commit)."""

    @abstractmethod
    def _snapshot(self, work: Callable[[Statements], T]) -> T:
        """Several reads that must see one snapshot."""

    def _glance(self, work: Callable[[Statements], T]) -> T:
        """`_snapshot` for a reader that would rather fail than wait (the feed that
        shows windows what changed must not stall a streaming turn through an outage):
        by default a snapshot."""
        return self._snapshot(work)

    def _glance_one(self, work: Callable[[Statements], T]) -> T:
        """`_glance` for work that is one statement (which sees one snapshot by
        itself): no transaction around it where a backend can skip one."""
        return self._glance(work)

    @abstractmethod
    def _write(self, work: Callable[[Statements], T]) -> T:
        """One write transaction, which other processes are told of."""

    def _quiet(self, work: Callable[[Statements], T]) -> T:
        """A write nobody else needs to fold in (a heartbeat, a kept fold): by default a
        write."""
        return self._write(work)

    def _quiet_one(self, work: Callable[[Statements], T]) -> T:
        """`_quiet` for work that is one statement (atomic by itself): no transaction
        around it where a backend can skip one."""
        return self._quiet(work)

    @abstractmethod
    def _aside(self, work: Callable[[Statements], None]) -> None:
        """A write of its own, on a connection of its own, callable from any thread (a
        kept fold): it never joins, nor waits on the Python side for, the event loop's
        transactions."""

    def _text(self, value: str | None) -> str | None:
        return self.dialect.text(value)
