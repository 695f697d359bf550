"""Who a process is in a lease, and how another process decides that it is dead.

Backend-independent: SQLite and PostgreSQL stores both ask `owner_is_dead` before
taking a lease over. On the same host a gone pid (or a pid reused by a process that
started later) is proof of death at once; across hosts only a heartbeat older than
the lease lifetime is.
"""

from __future__ import annotations

import os
import socket
import uuid
from functools import cache

from .base import Lease, Owner, Presence

HEARTBEAT_SECONDS = 0.3
"""How often an owner refreshes its leases and looks for interrupt requests; another
process's interrupt reaches the turn within about this long."""


def lease_ttl() -> float:
    """Seconds after the last heartbeat at which a lease is taken over even if its pid
    still exists (a stopped or hung process, or one on another machine)."""
    try:
        return max(1.0, float(os.environ.get("THREADLINE_LEASE_TTL", "20")))
    except ValueError:
        return 20.0


def _start_time(pid: int) -> float:
    """Start time of a process in clock ticks since boot (Linux), 0 where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return 0.0
    # Field 22; the command name (field 2) may contain spaces, so split after it.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return float(fields[19])
    except (IndexError, ValueError):
        return 0.0


@cache
def hostname() -> str:
    return os.environ.get("THREADLINE_HOST") or socket.gethostname()


def current_owner() -> Owner:
    """A fresh identity for this process (one per engine)."""
    pid = os.getpid()
    return Owner(id=uuid.uuid4().hex, pid=pid, host=hostname(), started=_start_time(pid))


def pid_alive(pid: int, started: float) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A pid that now belongs to a process started later is not our owner.
    return not started or _start_time(pid) in (0.0, started)


def owner_is_dead(lease: Lease | Presence, me: Owner, now: float) -> bool:
    """Proven dead: its heartbeat older than the lease lifetime, or (same host) its pid
    gone or reused. A live owner on another host is dead only by its heartbeat."""
    if lease.owner.id == me.id:
        return False
    if now - lease.heartbeat > lease_ttl():
        return True
    if lease.owner.host == me.host:
        return not pid_alive(lease.owner.pid, lease.owner.started)
    return False
