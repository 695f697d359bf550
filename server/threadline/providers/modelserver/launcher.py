"""The sidecar's side of sharing a server: find it, start its keeper if nobody runs
one, and wait until it is ready.

Everything is decided under the record lock, so two sidecars that need the server at
the same moment start one keeper between them: the first takes ``keeper.lock``
(non-blocking) and hands that very lock to the keeper it spawns (``pass_fds``); the
second finds the lock held and waits for the record to say ``ready``.

Waiting is polled with short sleeps, so an interrupt (cancellation) ends it at once,
and each change of state is reported as a status line for the client.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from .home import ServerHome, ServerRecord
from .spec import ServerSpec, SpecError

POLL = 0.1
KEEPER_MODULE = "threadline.providers.modelserver.keeper"


class ServerUnavailable(Exception):
    """The server cannot serve: it crash-looped, its file is missing, or it never
    became ready. ``reason`` is the -32011 failure reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class Launcher:
    def __init__(self, root: Path, spec: ServerSpec) -> None:
        self.spec = spec
        self.home = ServerHome.of(root, spec.key)

    async def wait_ready(self) -> AsyncIterator[str]:
        """Yield status lines until the server is ready; raise
        :class:`ServerUnavailable` if it cannot be."""
        sup = self.spec.supervision
        deadline = time.monotonic() + sup.ready_timeout * (sup.max_restarts + 1) + 30
        said: str | None = None
        while True:
            record = await self._step()
            if record.state == "ready":
                return
            line = self._status(record)
            if line != said:
                said = line
                yield line
            if time.monotonic() > deadline:
                raise ServerUnavailable(
                    "provider_unavailable",
                    f"the model server for {self.spec.path.name} did not become ready "
                    f"(state {record.state})",
                )
            await anyio.sleep(POLL)

    async def _step(self) -> ServerRecord:
        """One look under the lock: start a keeper if none runs; the record as it is."""
        self.home.create()
        async with self.home.alock():
            record = self.home.read()
            failed = record.state == "failed" and record.fingerprint == self.spec.fingerprint()
            if failed:  # and nothing changed since: the same error, no new attempt
                raise ServerUnavailable("provider_unavailable", record.error or "failed")
            fd = self.home.take_keeper_lock()
            if fd is None:
                return record  # a keeper runs (a failed one exits: then we start anew)
            try:
                if self.spec.fingerprint() is None:
                    raise ServerUnavailable(
                        "provider_unavailable",
                        f"the model file {self.spec.gguf} does not exist",
                    )
                try:
                    self.spec.preflight()
                except SpecError as exc:
                    raise ServerUnavailable("provider_unavailable", str(exc)) from exc
                self._spawn_keeper(fd)
            finally:
                os.close(fd)
            return self.home.read()

    def _spawn_keeper(self, lock_fd: int) -> None:
        self.home.spec_path.write_text(self.spec.to_json())
        self.home.write(
            ServerRecord(
                state="launching",
                model=self.spec.gguf,
                kind=self.spec.kind,
                slots=self.spec.slots,
                fingerprint=self.spec.fingerprint(),
            )
        )
        with self.home.keeper_log.open("ab") as out:
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    KEEPER_MODULE,
                    str(self.home.folder),
                    "--lock-fd",
                    str(lock_fd),
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=(lock_fd,),
                start_new_session=True,  # not the editor's process group: it outlives us
                cwd=self.home.folder,
            )

    def _status(self, record: ServerRecord) -> str:
        name = self.spec.path.name
        if record.state == "restarting":
            return f"the model server for {name} is restarting ({record.last_exit})"
        if record.state == "stopping":
            return f"the model server for {name} is stopping; starting it again"
        return f"starting the model server for {name} ({self.spec.kind})"

    async def current(self) -> ServerRecord | None:
        """The record if the server is ready (checked under the lock, after a slot is
        held), and the use noted; None if it is not ready any more."""
        async with self.home.alock():
            record = self.home.read()
            if record.state != "ready" or not self.home.keeper_alive():
                return None
            self.home.touch_used()
            return record


def stop(home: ServerHome, timeout: float = 15.0) -> bool:
    """Stop the server's keeper (which stops the server); True once none runs.

    Blocking, for tests, benchmarks and shutdown scripts, not for the event loop."""
    record = home.read()
    if home.keeper_alive() and record.keeper_pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.keeper_pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while home.keeper_alive():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
