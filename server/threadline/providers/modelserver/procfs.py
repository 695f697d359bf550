"""What ``/proc`` says about a process: alive or not, CPU time used, resident memory.

A pid alone is no identity (pids are reused), so a process is named by its pid *and*
its start time (field 22 of ``/proc/<pid>/stat``, in clock ticks since boot). A zombie
counts as dead: the model server is the keeper's child, and for the moment between its
death and the keeper's ``wait`` it is still listed.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class ProcStat:
    state: str
    cpu_ticks: int
    """User plus system CPU time, in clock ticks."""
    start: int
    """Start time in clock ticks since boot: with the pid, the process's identity."""


def stat(pid: int) -> ProcStat | None:
    """The process's state, or None if there is no such process."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) is in parentheses and may hold spaces or ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    return ProcStat(fields[0], int(fields[11]) + int(fields[12]), int(fields[19]))


def alive(pid: int | None, start: int | None) -> bool:
    """Whether the process ``pid`` that started at ``start`` still runs (zombies do not)."""
    if pid is None:
        return False
    s = stat(pid)
    if s is None or s.state in ("Z", "X", "x"):
        return False
    return start is None or s.start == start


def cpu_ticks(pid: int, start: int | None) -> int | None:
    """CPU time used so far by that very process, or None if it is gone."""
    s = stat(pid)
    if s is None or s.state in ("Z", "X", "x") or (start is not None and s.start != start):
        return None
    return s.cpu_ticks


def rss_kb(pid: int) -> int:
    """Resident set size in KiB (0 if the process is gone)."""
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def kill(pid: int | None, start: int | None, sig: int = signal.SIGKILL) -> bool:
    """Signal that very process (never a newcomer that reused its pid)."""
    if pid is None or not alive(pid, start):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)
        return True
    return False
