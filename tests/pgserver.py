"""A real PostgreSQL server for tests: Debian's binaries, a throw-away cluster in a temp
folder, listening on a free loopback port, password authentication (so tests can check
that the password never leaks), stopped when the test session ends."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psycopg

from tests import realparts

USER = "threadline"
PASSWORD = "s3cret-pw-never-printed"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    def __init__(self) -> None:
        # Found (and, in a pytest run, installed when missing) by tests/realparts.py.
        self.bin = realparts.use("postgresql").parent
        self.dir = Path(tempfile.mkdtemp(prefix="tl-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self._root = os.geteuid() == 0
        if self._root:
            shutil.chown(self.dir, "postgres", "postgres")
        pwfile = self.dir / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self._root:
            shutil.chown(pwfile, "postgres", "postgres")
        self._as_pg(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            USER,
            f"--pwfile={pwfile}",
            "--auth-local=scram-sha-256",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--no-sync",
        )
        with (self.data / "postgresql.conf").open("a") as f:
            f.write(
                f"listen_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.dir}'\nfsync = off\n"
                "synchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n"
            )
        for attempt in range(5):
            # The port was free when picked; another process may take it before the
            # server binds it (tests run in parallel): pick again.
            (self.data / "postgresql.auto.conf").write_text(f"port = {self.port}\n")
            if self._root:
                shutil.chown(self.data / "postgresql.auto.conf", "postgres", "postgres")
            try:
                self.start()
                break
            except subprocess.CalledProcessError:
                if attempt == 4:
                    raise
                self.port = _free_port()

    def _as_pg(self, *argv: str) -> None:
        cmd = ["runuser", "-u", "postgres", "--", *argv] if self._root else list(argv)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> None:
        self._as_pg(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.dir / "log"),
            "-w",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._as_pg(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{dbname}"

    def new_database(self) -> str:
        """A fresh, empty database; returns its URL."""
        name = "t_" + uuid.uuid4().hex[:12]
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(self.url(), autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE {name}")  # pyright: ignore[reportArgumentType]
                return self.url(name)
            except psycopg.OperationalError:
                # another test's CREATE DATABASE holds template1 for a moment
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def close(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)
