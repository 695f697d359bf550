"""The tables both backends keep, spelled once.

Column types and table options differ by backend and are named here by role
(``{int}``, ``{bool}``, …; `statements.Dialect.types` says what each is in its SQL);
index names carry the backend's table prefix (``{p}``), and table names get it from
`Dialect.sql` like every other statement. Each version's tables are created by
``CREATE … IF NOT EXISTS``, which is how a store of an older version is brought up to
the current one.
"""

from __future__ import annotations

from .statements import Dialect, Statements

_TABLES = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions(
    id TEXT PRIMARY KEY,
    parent_id TEXT,
    base_id TEXT,
    base_seq {int} NOT NULL DEFAULT 0,
    base_count {int} NOT NULL DEFAULT 0,
    forked_at_message_id TEXT,
    cwd TEXT NOT NULL,
    title TEXT,
    config TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    own_count {int} NOT NULL DEFAULT 0,
    last_seq {int} NOT NULL DEFAULT 0,
    deleted {bool} NOT NULL DEFAULT FALSE
);
CREATE INDEX IF NOT EXISTS {p}sessions_base ON sessions(base_id);
CREATE INDEX IF NOT EXISTS {p}sessions_updated ON sessions(updated_at);
CREATE TABLE IF NOT EXISTS events(
    session_id TEXT NOT NULL,
    seq {int} NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY(session_id, seq)
){norowid};
CREATE TABLE IF NOT EXISTS messages(
    message_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq {int} NOT NULL,
    ordinal {int} NOT NULL
){norowid};
CREATE INDEX IF NOT EXISTS {p}messages_session ON messages(session_id, ordinal);
CREATE TABLE IF NOT EXISTS inflight(
    session_id TEXT PRIMARY KEY,
    message_id TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks(
    id {serial},
    session_id TEXT NOT NULL,
    block TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS {p}chunks_session ON chunks(session_id, id);
CREATE TABLE IF NOT EXISTS leases(
    session_id TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    started {real} NOT NULL,
    kind TEXT NOT NULL,
    turn_id TEXT,
    since TEXT NOT NULL,
    heartbeat {real} NOT NULL,
    interrupt {bool} NOT NULL DEFAULT FALSE
);
CREATE INDEX IF NOT EXISTS {p}leases_owner ON leases(owner_id);
CREATE TABLE IF NOT EXISTS folds(
    session_id TEXT PRIMARY KEY,
    seq {int} NOT NULL,
    data {blob} NOT NULL,
    replay {blob}
);
CREATE TABLE IF NOT EXISTS texts(
    id {serial},
    session_id TEXT NOT NULL,
    message_id TEXT,
    role TEXT NOT NULL,
    body TEXT NOT NULL{tsv}
);
CREATE INDEX IF NOT EXISTS {p}texts_session ON texts(session_id);
CREATE TABLE IF NOT EXISTS pending(
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    position {int} NOT NULL,
    mode TEXT NOT NULL,
    prompt TEXT NOT NULL,
    state TEXT NOT NULL,
    turn_id TEXT,
    outcome TEXT,
    created_at TEXT NOT NULL,
    origin TEXT NOT NULL,
    changed {real} NOT NULL
);
CREATE INDEX IF NOT EXISTS {p}pending_session ON pending(session_id, position);
CREATE INDEX IF NOT EXISTS {p}sessions_parent ON sessions(parent_id);
CREATE TABLE IF NOT EXISTS blobs(
    hash TEXT PRIMARY KEY,
    mime_type TEXT NOT NULL,
    size {int} NOT NULL,
    width {int} NOT NULL,
    height {int} NOT NULL,
    data {blob} NOT NULL
);
CREATE TABLE IF NOT EXISTS blob_refs(
    session_id TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY(session_id, hash)
){norowid};
CREATE INDEX IF NOT EXISTS {p}blob_refs_hash ON blob_refs(hash);
CREATE TABLE IF NOT EXISTS owners(
    owner_id TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    started {real} NOT NULL,
    heartbeat {real} NOT NULL
)
"""

CATALOG_COLUMNS = (
    ("archived", "{bool} NOT NULL DEFAULT FALSE"),
    ("tags", "TEXT NOT NULL DEFAULT '[]'"),
    ("preview", "TEXT"),
)
"""Columns of ``sessions`` added by the catalog (SQLite schema 4, PostgreSQL 3): added
to a table of any age by `store.catalog.upgrade`, so they are spelled only here."""

_SEARCH = {
    # The FTS5 index reads its text from ``texts`` (external content) and is kept in
    # step with it by triggers, inside whatever transaction writes ``texts``.
    "fts5": (
        "CREATE VIRTUAL TABLE IF NOT EXISTS texts_fts USING fts5("
        "body, content='texts', content_rowid='id', tokenize='porter unicode61')",
        "CREATE TRIGGER IF NOT EXISTS texts_ai AFTER INSERT ON texts BEGIN "
        "INSERT INTO texts_fts(rowid, body) VALUES (new.id, new.body); END",
        "CREATE TRIGGER IF NOT EXISTS texts_ad AFTER DELETE ON texts BEGIN "
        "INSERT INTO texts_fts(texts_fts, rowid, body) VALUES ('delete', old.id, old.body); END",
    ),
    # ``texts.tsv`` is a generated column (`Dialect.types["tsv"]`); GIN indexes it.
    "tsvector": ("CREATE INDEX IF NOT EXISTS {p}texts_tsv ON texts USING GIN(tsv)",),
}


def upgrade_folds(db: Statements, dialect: Dialect) -> None:
    """Give a ``folds`` table of an older schema its ``replay`` column (SQLite schema 7,
    PostgreSQL 6: a kept fold's replay kept apart, so ``session/history`` does not read
    it), and drop the folds it holds: they are of an older snapshot format, which no
    process of this version restores (each is folded from the log and written again)."""
    if "replay" not in db.columns("folds"):
        db.run(f"ALTER TABLE folds ADD COLUMN replay {dialect.types['blob']}")
        db.run("DELETE FROM folds")
    if dialect.types["blob"] == "BYTEA":
        db.run(_LZ4_FOLDS)


_LZ4_FOLDS = (
    "DO $$ BEGIN ALTER TABLE folds ALTER COLUMN data SET COMPRESSION lz4, "
    "ALTER COLUMN replay SET COMPRESSION lz4; EXCEPTION WHEN OTHERS THEN NULL; END $$"
)
"""PostgreSQL compresses a kept fold (tens of megabytes) as it stores it: with lz4
rather than pglz, writing a 30 MB fold took 0.87 s instead of 1.76 s and reading it
0.17–0.28 s instead of 0.27–0.63 s (measured on loopback, load 10). A server without
lz4 (before PostgreSQL 14, or built without it) keeps pglz."""


def tables(dialect: Dialect) -> list[str]:
    """The statements that create every table and index, in the shared spelling with
    this backend's types (run them through `Statements`, which adds the prefix)."""
    text = _TABLES.format(p=dialect.prefix, **dialect.types)
    return [s.strip() for s in text.split(";") if s.strip()]


def search_index(dialect: Dialect) -> list[str]:
    """The statements that create the full-text index over ``texts``."""
    return [s.format(p=dialect.prefix) for s in _SEARCH[dialect.fts]]
