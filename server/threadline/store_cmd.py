"""``threadline store migrate``: copy a data folder's SQLite sessions to PostgreSQL.

Each session is copied in one transaction with its own rows (a fork stays one row
pointing at its base, so forks are kept as forks and a fork of a 100k-message
session costs no more there than here). Running it again copies only what is new:
a session already there is kept, or extended by the events it lacks. At the end every
session's events and messages are counted on both sides. Sessions a sidecar is
running right now are refused, so nothing half-written is copied.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .settings import Settings
from .store.base import StoreError
from .store.factory import is_postgres
from .store.owners import current_owner, owner_is_dead
from .userconfig import ConfigError, store_url


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="store_command", required=True)
    migrate = sub.add_parser(
        "migrate", help="copy sessions from this data folder's SQLite store to PostgreSQL"
    )
    migrate.add_argument(
        "--from",
        dest="source",
        default="sqlite",
        help="'sqlite' (the store in THREADLINE_HOME) or the path of a threadline.db",
    )
    migrate.add_argument(
        "--to",
        dest="target",
        help="postgresql://user@host/db (default: THREADLINE_STORE or store = in the config)",
    )


def main(args: argparse.Namespace, err: TextIO | None = None) -> int:
    stream: TextIO = err or sys.stderr
    try:
        return migrate(args.source, args.target, stream)
    except (StoreError, ConfigError) as exc:
        print(f"threadline: {exc}", file=stream)
        return 2


def migrate(source: str, target: str | None, err: TextIO) -> int:
    from .store.postgres import PostgresStore
    from .store.sqlite import EventStore

    settings = Settings.from_env()
    path = settings.db_path if source == "sqlite" else Path(source).expanduser()
    if not path.is_file():
        raise StoreError(f"no SQLite session store at {path}")
    configured = store_url()
    url = target or (configured.reveal() if configured else None)
    if url is None or not is_postgres(url):
        raise StoreError("--to needs a postgresql:// URL")
    src = EventStore(path)
    dst = PostgresStore(url)
    me = current_owner()
    counts = {"copied": 0, "extended": 0, "kept": 0}
    try:
        ids = src.dump_ids()
        for sid in ids:
            lease = src.get_lease(sid)
            if lease is not None and not owner_is_dead(lease, me, time.time()):
                raise StoreError(
                    f"session {sid} is in use by Threadline pid {lease.owner.pid} on "
                    f"{lease.owner.host}; close the editors using {path.parent} and run again"
                )
        progress = Progress(
            TextColumn("copying sessions"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(file=err),
        )
        expected: dict[str, tuple[int, int, int]] = {}
        with progress:
            task = progress.add_task("copy", total=len(ids))
            for sid in ids:
                dump = src.dump_session(sid)
                if dump is not None:
                    counts[dst.import_session(dump)] += 1
                    expected[sid] = (dump.row.last_seq, len(dump.events), len(dump.messages))
                progress.advance(task)
        wrong = [
            sid
            for sid, (last, events, messages) in expected.items()
            if dst.stored_counts(sid, last) != (events, messages)
        ]
    finally:
        src.close()
        dst.close()
    if wrong:
        raise StoreError(
            f"{len(wrong)} sessions differ after the copy (first: {wrong[0]}); "
            "nothing was deleted from the SQLite store"
        )
    print(
        f"{len(expected)} sessions checked on {dst.where}: {counts['copied']} copied, "
        f"{counts['extended']} extended, {counts['kept']} already there. The SQLite store "
        f"at {path} is unchanged; set THREADLINE_STORE or store = to use the new one.",
        file=err,
    )
    return 0
