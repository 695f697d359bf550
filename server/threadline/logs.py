"""Logging to stderr and to a log file in the data folder; stdout is the protocol's."""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys

from .redact import RedactingFilter
from .settings import Settings


class _FileLog(logging.handlers.RotatingFileHandler):
    """The log file, which may stop accepting lines (a full disk): say so once on
    stderr instead of a traceback per line, and carry on when it accepts them again."""

    failing = False
    _ok = True

    def emit(self, record: logging.LogRecord) -> None:
        self._ok = True
        super().emit(record)
        if self._ok:
            self.failing = False

    def handleError(self, record: logging.LogRecord) -> None:
        self._ok = False
        if self.failing:
            return
        self.failing = True
        error = sys.exc_info()[1]
        sys.stderr.write(
            f"threadline: cannot write the log file {self.baseFilename} ({error}); "
            "logging to stderr only until it can\n"
        )


def setup_logging(settings: Settings) -> None:
    root = logging.getLogger()
    root.setLevel(settings.log_level)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    err = logging.StreamHandler()
    err.setFormatter(fmt)
    err.addFilter(RedactingFilter())
    root.addHandler(err)
    settings.log_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    old = os.umask(0o077)
    try:
        fh = _FileLog(
            settings.log_path,
            maxBytes=5 * 1024 * 1024,
            backupCount=2,
            encoding="utf-8",
            errors="backslashreplace",  # a line may quote a lone surrogate from the wire
        )
    finally:
        os.umask(old)
    fh.setFormatter(fmt)
    fh.addFilter(RedactingFilter())
    root.addHandler(fh)
    for noisy in ("pygls", "httpx", "httpx2", "httpcore", "openai", "anthropic", "mcp", "bm25s"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
