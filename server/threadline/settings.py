"""Where Threadline keeps its data, and the few settings read from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def data_dir() -> Path:
    """``THREADLINE_HOME``, else the platform's user data folder."""
    home = os.environ.get("THREADLINE_HOME")
    if home:
        return Path(home).expanduser().resolve()
    from platformdirs import user_data_dir

    return Path(user_data_dir("threadline", appauthor=False))


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
