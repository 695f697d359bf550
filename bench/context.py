"""What every figure gets: the run's mode, its scratch folder, and a progress log."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from .servers import Scratch


@dataclass(slots=True)
class Context:
    quick: bool
    scratch: Scratch
    started: float = field(default_factory=time.monotonic)
    scale: tuple[int, int] | None = None
    """``--scale SxN``: the scale figure's sidecars and sessions each."""

    def n(self, full: int, quick: int) -> int:
        """A count: ``full`` for a real run, ``quick`` for the CI smoke run."""
        return quick if self.quick else full

    def log(self, message: str) -> None:
        """Progress goes to stderr, so stdout carries only the report."""
        elapsed = time.monotonic() - self.started
        print(f"[bench {elapsed:6.1f}s] {message}", file=sys.stderr, flush=True)
