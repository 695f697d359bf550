"""The session store's operations written once, for SQLite and PostgreSQL alike.

`SqlStore` is `store.base.SessionStore` over the tables of `store.schema`, assembled
from one class per part of the contract: sessions and forks (`store.sessions`), the
event log and kept folds (`store.eventlog`), the stream journal (`store.journal`),
leases (`store.leases`), the catalog and search (`store.catalog`, `store.search`), and
the prompts sent while a session works (`store.pending`).
Each is written against the seam (`store.seam.SqlBase`) in the shared SQL spelling
(`store.statements`); a backend supplies how work runs.
"""

from __future__ import annotations

from .catalog import CatalogOps
from .eventlog import EventLogOps
from .journal import JournalOps
from .leases import LeaseOps
from .pending import PendingOps
from .search import SearchOps


class SqlStore(PendingOps, EventLogOps, JournalOps, LeaseOps, CatalogOps, SearchOps):
    """`store.base.SessionStore` over SQL tables; a backend supplies how work runs."""
