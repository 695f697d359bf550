"""What the person types: whole lines from the terminal, read through the event loop.

The terminal stays in its ordinary (canonical) mode: the kernel does line editing, a
pending read can be abandoned on Ctrl-C, and nothing is left blocking when the chat exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import termios
from collections import deque


class Sigint:
    """Returned by a read that Ctrl-C abandoned."""


SIGINT = Sigint()


class LineInput:
    """Whole lines from a file descriptor, read when the event loop says it is readable.

    A regular file cannot be watched by the loop; then a worker thread reads instead.
    """

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._lines: deque[str] = deque()
        self._eof = False

    def _take(self, data: bytes) -> None:
        if not data:
            self._eof = True
            if self._buffer:
                self._lines.append(self._buffer.decode(errors="replace"))
                self._buffer.clear()
            return
        self._buffer += data
        while (nl := self._buffer.find(b"\n")) >= 0:
            self._lines.append(self._buffer[:nl].decode(errors="replace").rstrip("\r"))
            del self._buffer[: nl + 1]

    def echo(self, enabled: bool, *, discard_typeahead: bool = False) -> None:
        """Turn the terminal's echo off while an answer streams (typed keys would be
        drawn into the live area) and back on for the prompt; keys typed meanwhile
        are discarded, since the user could not see them."""
        if not os.isatty(self._fd):
            return
        with contextlib.suppress(termios.error):
            attrs = termios.tcgetattr(self._fd)
            if enabled:
                attrs[3] |= termios.ECHO
            else:
                attrs[3] &= ~termios.ECHO
            termios.tcsetattr(self._fd, termios.TCSANOW, attrs)
            if discard_typeahead:
                termios.tcflush(self._fd, termios.TCIFLUSH)

    async def readline(self) -> str | None:
        """The next line without its newline, or None at end of input."""
        loop = asyncio.get_running_loop()
        while not self._lines and not self._eof:
            ready: asyncio.Future[None] = loop.create_future()

            def on_readable(ready: asyncio.Future[None] = ready) -> None:
                try:
                    data = os.read(self._fd, 65536)
                except BlockingIOError:
                    return
                except OSError:
                    data = b""
                self._take(data)
                if (self._lines or self._eof) and not ready.done():
                    ready.set_result(None)

            try:
                loop.add_reader(self._fd, on_readable)
            except (PermissionError, ValueError, NotImplementedError):
                self._take(await asyncio.to_thread(os.read, self._fd, 65536))
                continue
            try:
                await ready
            finally:
                loop.remove_reader(self._fd)
        return self._lines.popleft() if self._lines else None
