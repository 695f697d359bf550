"""Where Threadline keeps its data, and the few settings read from the environment."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path


class HomeUnusable(Exception):
    """The data folder cannot be created or written; ``str(exc)`` says which and what to do."""


def data_dir() -> Path:
    """``THREADLINE_HOME``, else the platform's user data folder."""
    home = os.environ.get("THREADLINE_HOME")
    if home:
        return Path(home).expanduser().resolve()
    from platformdirs import user_data_dir

    return Path(user_data_dir("threadline", appauthor=False))


@dataclass(frozen=True, slots=True)
class DelegateLimits:
    """How far the agent may hand work to child sessions (``delegate``)."""

    parallel: int = 4
    """Children of one process running at once (``THREADLINE_CHILDREN``); the others
    wait for a slot."""
    depth: int = 2
    """How deep children may nest (``THREADLINE_DELEGATE_DEPTH``): a session that many
    ``delegate`` calls deep is refused another; 0 turns delegation off."""

    @classmethod
    def from_env(cls) -> DelegateLimits:
        def number(name: str, default: int) -> int:
            raw = os.environ.get(name, "").strip()
            return max(int(raw), 0) if raw.isdigit() else default

        return cls(
            parallel=max(number("THREADLINE_CHILDREN", 4), 1),
            depth=number("THREADLINE_DELEGATE_DEPTH", 2),
        )


@dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    default_model: str | None
    log_level: str

    @property
    def db_path(self) -> Path:
        return self.home / "threadline.db"

    @property
    def log_path(self) -> Path:
        return self.home / "logs" / "threadline.log"

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            home=data_dir(),
            default_model=os.environ.get("THREADLINE_MODEL") or None,
            log_level=os.environ.get("THREADLINE_LOG_LEVEL", "INFO").upper(),
        )

    def prepare_home(self) -> None:
        """Create the data folder and its log folder and prove them writable, so a
        read-only, foreign or impossible folder is one clear line at start, not a
        traceback from whichever part happens to write first."""
        folder = self.home
        try:
            for folder in (self.home, self.log_path.parent):
                folder.mkdir(parents=True, exist_ok=True, mode=0o700)
                with tempfile.TemporaryFile(dir=folder):
                    pass
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise HomeUnusable(
                f"cannot write to the data folder {folder} ({reason}); make it writable "
                "or set THREADLINE_HOME to a folder you can write to"
            ) from None
