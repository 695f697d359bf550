"""A model server's folder in the home: its record, under a file lock, and its lock files.

``$THREADLINE_HOME/modelservers/<key>/`` holds:

* ``lock`` — ``flock``-ed around every read-decide-write of the record (and the queue's
  ticket counter), by sidecars and by the keeper alike;
* ``record.json`` — state, port, pid, generation, restarts, the last failure (written
  whole and renamed, so a reader without the lock never sees half a record);
* ``spec.json`` — the :class:`~.spec.ServerSpec` the keeper runs;
* ``keeper.lock`` — held for its whole life by the keeper process (taken by the
  sidecar that starts it and inherited), so "is anyone supervising?" is one
  non-blocking ``flock``, with no pid guessing;
* ``slots/<i>`` — one lock file per slot, held while a request is in flight;
* ``queue/<ticket>`` — one file per waiting request, locked by its owner (a file whose
  lock can be taken belongs to a process that died and is swept);
* ``used`` — touched whenever a request takes or gives back a slot: its mtime is the
  last use, for the idle stop;
* ``server.log``, ``keeper.log`` — the server's and the keeper's output.

``flock`` locks belong to an open file description, so they work between processes
and between two opens in one process alike, and the kernel drops them when the
holder dies: a crashed sidecar never leaves a slot taken.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import AsyncGenerator, Generator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Literal

import anyio

State = Literal["launching", "starting", "ready", "restarting", "stopping", "stopped", "failed"]

LOCK_POLL = 0.01


@dataclass(slots=True)
class ServerRecord:
    state: State = "stopped"
    model: str = ""
    kind: str = ""
    slots: int = 1
    port: int | None = None
    pid: int | None = None
    pid_start: int | None = None
    """The server process's start time (ticks since boot): with ``pid``, its identity."""
    keeper_pid: int | None = None
    generation: int = 0
    """Servers started by this keeper so far."""
    restarts: int = 0
    crashes: list[float] = field(default_factory=list)
    """Wall-clock times of recent crashes (within the restart window)."""
    last_exit: str | None = None
    error: str | None = None
    fingerprint: list[int] | None = None
    """Size and mtime of the model file when the keeper started."""
    api_key: str | None = None
    """The server's key, new for each keeper (this file is readable by its owner only)."""
    updated_at: float = 0.0

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> ServerRecord:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})  # type: ignore[arg-type]


class ServerHome:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lock_path = folder / "lock"
        self.record_path = folder / "record.json"
        self.spec_path = folder / "spec.json"
        self.keeper_lock_path = folder / "keeper.lock"
        self.used_path = folder / "used"
        self.slots_dir = folder / "slots"
        self.queue_dir = folder / "queue"
        self.server_log = folder / "server.log"
        self.keeper_log = folder / "keeper.log"

    @classmethod
    def of(cls, root: Path, key: str) -> ServerHome:
        """The folder for server ``key`` under the Threadline home ``root``."""
        return cls(servers_dir(root) / key)

    def create(self) -> ServerHome:
        for d in (self.folder, self.slots_dir, self.queue_dir):
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self

    # -- the record -------------------------------------------------------------------

    def read(self) -> ServerRecord:
        try:
            data = json.loads(self.record_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return ServerRecord()
        return ServerRecord.from_dict(data)

    def write(self, record: ServerRecord) -> None:
        record.updated_at = time.time()
        tmp = self.record_path.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(asdict(record), indent=1))
        os.replace(tmp, self.record_path)

    @contextlib.contextmanager
    def lock(self) -> Generator[None]:
        """The record lock, blocking (for the keeper, which has nothing else to do)."""
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @contextlib.asynccontextmanager
    async def alock(self) -> AsyncGenerator[None]:
        """The record lock for async code: polled, so waiting never blocks the loop."""
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            # Polled: another process holds it for milliseconds, and a blocking flock
            # would stall the event loop (and could not be interrupted).
            while True:
                if try_flock(fd):
                    break
                await anyio.sleep(LOCK_POLL)
            yield
        finally:
            os.close(fd)

    def update(self, **changes: object) -> ServerRecord:
        """Read, change and write the record under the lock."""
        with self.lock():
            record = self.read()
            for k, v in changes.items():
                setattr(record, k, v)
            self.write(record)
            return record

    # -- liveness of the keeper and use of the slots ------------------------------------

    def take_keeper_lock(self) -> int | None:
        """The keeper lock's fd if no keeper holds it (then the caller starts one and
        hands it the fd), else None."""
        fd = os.open(self.keeper_lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        if try_flock(fd):
            return fd
        os.close(fd)
        return None

    def keeper_alive(self) -> bool:
        try:
            fd = os.open(self.keeper_lock_path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            return not try_flock(fd, fcntl.LOCK_SH)
        finally:
            os.close(fd)

    def slot_path(self, index: int) -> Path:
        return self.slots_dir / str(index)

    def slots_busy(self, slots: int) -> int:
        """How many of the ``slots`` are held right now."""
        busy = 0
        for i in range(slots):
            try:
                fd = os.open(self.slot_path(i), os.O_RDWR)
            except FileNotFoundError:
                continue  # never taken
            try:
                if not try_flock(fd, fcntl.LOCK_SH):
                    busy += 1
            finally:
                os.close(fd)
        return busy

    def touch_used(self) -> None:
        self.used_path.touch()
        os.utime(self.used_path)

    def idle_for(self) -> float:
        """Seconds since a request last took or gave back a slot."""
        try:
            return max(0.0, time.time() - self.used_path.stat().st_mtime)
        except FileNotFoundError:
            return float("inf")

    def log_tail(self, path: Path | None = None, lines: int = 3, since: int = 0) -> str:
        """The last lines of a log (from byte ``since``), for error messages."""
        try:
            with (path or self.server_log).open("rb") as f:
                f.seek(since)
                text = f.read()[-8192:].decode("utf-8", "replace")
        except OSError:
            return ""
        kept = [line.strip() for line in text.splitlines() if line.strip()]
        return " | ".join(kept[-lines:])


def try_flock(fd: int, kind: int = fcntl.LOCK_EX) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def servers_dir(root: Path) -> Path:
    return root / "modelservers"


def all_servers(root: Path) -> list[ServerHome]:
    """Every server folder under the home (for ``threadline models`` and cleanup)."""
    folder = servers_dir(root)
    if not folder.is_dir():
        return []
    return [ServerHome(p) for p in sorted(folder.iterdir()) if (p / "record.json").exists()]
