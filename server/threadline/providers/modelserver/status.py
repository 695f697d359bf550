"""What each shared model server is doing, for ``threadline models`` (read-only).

The record alone can be stale (a keeper killed with ``SIGKILL`` leaves "ready"
behind), so the state shown also asks whether a keeper holds ``keeper.lock`` and
whether the server pid is alive.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import procfs
from .home import ServerHome, all_servers
from .spec import ServerSpec


@dataclass(frozen=True, slots=True)
class ServerStatus:
    key: str
    model: str
    kind: str
    state: str
    pid: int | None
    port: int | None
    slots: int
    slots_busy: int
    restarts: int
    detail: str
    rss_kb: int = 0

    def summary(self) -> str:
        pid = f"pid {self.pid}" if self.pid else "no pid"
        return (
            f"{pid}, {self.slots_busy}/{self.slots} slots busy, "
            f"{self.restarts} restart{'s' if self.restarts != 1 else ''}"
        )


def describe(home: ServerHome, spec: ServerSpec | None = None) -> ServerStatus:
    record = home.read()
    keeper = home.keeper_alive()
    state = record.state
    if not keeper and state not in ("failed", "stopped"):
        state = "stopped"
    if state == "failed" and spec is not None and record.fingerprint != spec.fingerprint():
        state = "stopped"  # the file changed: the next use starts afresh
    pid = record.pid if procfs.alive(record.pid, record.pid_start) else None
    if state == "failed":
        detail = record.error or "failed"
    elif record.last_exit:
        detail = f"last exit: {record.last_exit}"
    else:
        detail = ""
    return ServerStatus(
        key=home.folder.name,
        model=Path(record.model).name if record.model else home.folder.name,
        kind=record.kind,
        state=state,
        pid=pid,
        port=record.port if pid else None,
        slots=record.slots,
        slots_busy=home.slots_busy(record.slots) if pid else 0,
        restarts=record.restarts,
        detail=detail,
        rss_kb=procfs.rss_kb(pid) if pid else 0,
    )


def servers(root: Path) -> list[ServerStatus]:
    """Every model server ever started under the home ``root``."""
    return [describe(h) for h in all_servers(root)]
