"""Content-addressed blobs (image bytes), stored once and referenced from events.

An event that carries an image keeps only its hash (``threadline-blob:<sha256>``); the
bytes are one row of ``blobs``, whoever sent them and however often. Which sessions
reference a blob is ``blob_refs`` (session, hash): a row is added in the transaction
that appends the referencing event, and dropped when that session's rows are dropped
(`store.sessions`' collection, which waits until no fork reads them). So a fork, which
reads its base's events, adds no row (O(1) stays one row), and the last session to go
takes its blobs with it.

Many sidecars share a store. A blob is freed only by a statement that sees no
reference to it, after locking its row (PostgreSQL; SQLite's write transaction already
excludes other writers), and a reference is added by an upsert that locks (or re-makes)
the blob's row first: so a blob some process is adding a reference to is never freed
under it, and a blob freed meanwhile is written again.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Blob, BlobInfo, StoreError
from .seam import SqlBase
from .statements import Statements

BLOB_SCHEME = "threadline-blob:"
"""How a stored block names its blob (``threadline-blob:<sha256 hex>``)."""


def add_refs(db: Statements, session_id: str, blobs: Sequence[Blob]) -> None:
    """Store each blob (once) and note that ``session_id`` references it, inside the
    caller's transaction (the one that appends the referencing events)."""
    unique = {b.hash: b for b in blobs}
    for b in (unique[h] for h in sorted(unique)):  # one lock order in every process
        # DO UPDATE (not NOTHING) locks the row, so a concurrent free waits for us.
        db.run(
            "INSERT INTO blobs(hash, mime_type, size, width, height, data) VALUES(?,?,?,?,?,?) "
            "ON CONFLICT(hash) DO UPDATE SET hash=excluded.hash",
            (b.hash, b.mime_type, len(b.data), b.width, b.height, b.data),
        )
        db.run(
            "INSERT INTO blob_refs(session_id, hash) VALUES(?,?) "
            "ON CONFLICT(session_id, hash) DO NOTHING",
            (session_id, b.hash),
        )


def drop_refs(db: Statements, session_id: str) -> None:
    """Forget ``session_id``'s references (its rows are being dropped) and free every
    blob no session references any more."""
    hashes = [
        str(r[0]) for r in db.all("SELECT hash FROM blob_refs WHERE session_id=?", (session_id,))
    ]
    if not hashes:
        return
    db.run("DELETE FROM blob_refs WHERE session_id=?", (session_id,))
    for h in sorted(hashes):  # one order in every process: no lock cycles
        if db.one("SELECT hash FROM blobs WHERE hash=? FOR UPDATE", (h,)) is None:
            continue
        db.run(
            "DELETE FROM blobs WHERE hash=? AND NOT EXISTS "
            "(SELECT 1 FROM blob_refs WHERE blob_refs.hash=blobs.hash)",
            (h,),
        )


def session_blobs(db: Statements, session_id: str) -> list[Blob]:
    """The blobs ``session_id``'s own events reference (what a migration copies)."""
    return [
        Blob(str(h), str(m), bytes(d), int(w), int(ht))
        for h, m, w, ht, d in db.all(
            "SELECT blobs.hash, mime_type, width, height, data FROM blob_refs "
            "JOIN blobs ON blobs.hash=blob_refs.hash WHERE session_id=? ORDER BY blobs.hash",
            (session_id,),
        )
    ]


class BlobOps(SqlBase):
    """Reading blobs (writing them is part of appending events)."""

    keeps_blobs: bool = True
    """Whether this connection may use the blob tables (a team role granted only the
    older tables may not: then an image cannot be stored, and nothing is freed)."""

    def _add_refs(self, db: Statements, session_id: str, blobs: Sequence[Blob]) -> None:
        if not blobs:
            return
        if not self.keeps_blobs:
            raise StoreError(
                "this store's schema predates images, or this role may not use its blob "
                "tables; the next sidecar of the tables' owner upgrades it (docs/teams.md)"
            )
        add_refs(db, session_id, blobs)

    def _drop_refs(self, db: Statements, session_id: str) -> None:
        if self.keeps_blobs:
            drop_refs(db, session_id)

    def get_blob(self, hash: str) -> tuple[BlobInfo, bytes] | None:
        r = self._read(
            lambda db: db.one(
                "SELECT mime_type, size, width, height, data FROM blobs WHERE hash=?", (hash,)
            )
        )
        if r is None:
            return None
        return BlobInfo(hash, str(r[0]), int(r[1]), int(r[2]), int(r[3])), bytes(r[4])

    def blob_count(self) -> int:
        """How many blobs the store holds (what tests and `threadline store` look at)."""
        r = self._read(lambda db: db.one("SELECT COUNT(*) FROM blobs"))
        return 0 if r is None else int(r[0])
