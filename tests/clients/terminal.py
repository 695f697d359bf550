"""A program in a real pseudo-terminal, driven like a person at a keyboard.

Standard library only (``pty``): the child gets a controlling terminal of a fixed size,
so Ctrl-C typed as ``\\x03`` is turned into SIGINT by the kernel's line discipline,
exactly as in a terminal emulator. What the program writes is kept, and ``expect``
searches it with the escape sequences (colours, cursor moves) taken out.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import select
import signal
import struct
import termios
import time
from collections.abc import Mapping, Sequence

ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, links
    r"|\x1b[()][A-Za-z0-9]"  # charset selection
    r"|\x1b[=>78]"  # keypad modes, save/restore cursor
)


def plain(raw: str) -> str:
    """Terminal output as text: escapes removed, carriage returns dropped."""
    return ANSI.sub("", raw).replace("\r", "")


class Terminal:
    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        cols: int = 100,
        rows: int = 30,
        cwd: str | None = None,
    ) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: exec the program on the terminal's slave side
            try:
                if cwd:
                    os.chdir(cwd)
                os.execvpe(argv[0], list(argv), dict(env))
            finally:
                os._exit(127)
        self.pid = pid
        self.fd = fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.raw = ""
        self.pos = 0
        self.returncode: int | None = None

    @property
    def text(self) -> str:
        return plain(self.raw)

    def _pump(self, timeout: float) -> bool:
        """Read what is there (waiting up to ``timeout``); False once the child is gone."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the slave side is closed, the child exited
            return False
        if not data:
            return False
        self.raw += data.decode("utf-8", errors="replace")
        return True

    def expect(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        """Wait for ``pattern`` (a regex) in the output after the previous match."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            text = self.text
            match = regex.search(text, self.pos)
            if match:
                self.pos = match.end()
                return match
            left = deadline - time.monotonic()
            if left <= 0 or (not self._pump(min(left, 0.1)) and not self._alive()):
                tail = text[self.pos :][-2000:]
                raise AssertionError(f"{pattern!r} not seen within {timeout} s; output:\n{tail}")

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def line(self, text: str) -> None:
        self.send(text + "\r")

    def ctrl_c(self) -> None:
        self.send("\x03")

    def ctrl_d(self) -> None:
        self.send("\x04")

    def _alive(self) -> bool:
        if self.returncode is not None:
            return False
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return True
        self.returncode = os.waitstatus_to_exitcode(status)
        return False

    def wait(self, timeout: float = 15.0) -> int:
        """Wait for the program to exit (reading its output meanwhile)."""
        deadline = time.monotonic() + timeout
        while self._alive():
            if time.monotonic() > deadline:
                raise AssertionError(f"still running after {timeout} s:\n{self.text[-2000:]}")
            self._pump(0.05)
        with contextlib.suppress(OSError):
            while self._pump(0):
                pass
        assert self.returncode is not None
        return self.returncode

    def close(self) -> None:
        if self._alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.returncode = -9
        with contextlib.suppress(OSError):
            os.close(self.fd)
