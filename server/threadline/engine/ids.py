"""Opaque ids that are unique for ever and sort by creation time."""

from __future__ import annotations

import os
import time


def new_id(prefix: str) -> str:
    """``prefix_`` + 12 hex digits of milliseconds + 16 random hex digits."""
    return f"{prefix}_{int(time.time() * 1000):012x}{os.urandom(8).hex()}"


def now_iso() -> str:
    """UTC timestamp with milliseconds, sortable as text."""
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"
