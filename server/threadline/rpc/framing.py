"""Incremental frame decoder for both framings, detected from the first byte.

A header line (``Content-Length: …``) → LSP-style frames; ``{`` or ``[`` → one JSON
value per line (ACP). The server answers in the framing the client used. A first line
that is neither (``hello``) is passed on as a body, so it is answered with a parse
error, and the framing is decided by the next line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

MAX_MESSAGE = 50 * 1024 * 1024
"""Largest message accepted (bytes)."""

Framing = Literal["headers", "lines"]

_WS = b" \t\r\n"
_LENGTH = re.compile(rb"content-length\s*:\s*(\d+)", re.IGNORECASE)
_HEADER = re.compile(rb"[A-Za-z][A-Za-z0-9-]*[ \t]*:")
_MAX_HEADER = 64 * 1024


@dataclass(frozen=True, slots=True)
class FrameError:
    """A frame that could not be read; the server answers it with an error."""

    message: str


class FrameDecoder:
    def __init__(self, max_message: int = MAX_MESSAGE) -> None:
        self.framing: Framing | None = None
        self._buf = bytearray()
        self._need: int | None = None
        self._skip = 0
        self._max = max_message

    def feed(self, data: bytes) -> list[bytes | FrameError]:
        """Bytes in; complete message bodies (or errors) out, in order."""
        self._buf += data
        out: list[bytes | FrameError] = []
        if self.framing is None:
            self.framing = self._detect(out)
        if self.framing is None:
            return out
        if self.framing == "lines":
            self._lines(out)
        else:
            self._headers(out)
        return out

    def _detect(self, out: list[bytes | FrameError]) -> Framing | None:
        """The framing, from the first line that is JSON or a header; lines that are
        neither go out as bodies (the server answers each with a parse error)."""
        while True:
            stripped = self._buf.lstrip(_WS)
            del self._buf[: len(self._buf) - len(stripped)]
            if not self._buf:
                return None
            if self._buf[0] in b"{[":
                return "lines"
            if _HEADER.match(self._buf):
                return "headers"
            nl = self._buf.find(b"\n")
            if nl < 0:
                if len(self._buf) > _MAX_HEADER:
                    out.append(FrameError("first line is neither JSON nor a header"))
                    self._buf.clear()
                return None
            out.append(bytes(self._buf[:nl]).strip())
            del self._buf[: nl + 1]

    def _lines(self, out: list[bytes | FrameError]) -> None:
        while True:
            if self._skip:
                nl = self._buf.find(b"\n")
                if nl < 0:
                    self._buf.clear()
                    return
                del self._buf[: nl + 1]
                self._skip = 0
                continue
            nl = self._buf.find(b"\n")
            if nl < 0:
                if len(self._buf) > self._max:
                    out.append(FrameError(f"message longer than {self._max} bytes"))
                    self._buf.clear()
                    self._skip = 1
                return
            line = bytes(self._buf[:nl]).strip()
            del self._buf[: nl + 1]
            if line:
                out.append(line)

    def _headers(self, out: list[bytes | FrameError]) -> None:
        while True:
            if self._need is None:
                # tolerate stray blank lines between frames
                stripped = self._buf.lstrip(_WS)
                del self._buf[: len(self._buf) - len(stripped)]
                end = self._buf.find(b"\r\n\r\n")
                sep = 4
                if end < 0:
                    end = self._buf.find(b"\n\n")
                    sep = 2
                if end < 0:
                    if len(self._buf) > _MAX_HEADER:
                        out.append(FrameError("header block too long"))
                        self._buf.clear()
                    return
                header = bytes(self._buf[:end])
                del self._buf[: end + sep]
                m = _LENGTH.search(header)
                if m is None:
                    out.append(FrameError("missing Content-Length header"))
                    continue
                length = int(m.group(1))
                if length > self._max:
                    out.append(FrameError(f"message of {length} bytes is over the limit"))
                    self._skip = length
                    self._need = 0
                else:
                    self._need = length
            if self._skip:
                n = min(self._skip, len(self._buf))
                del self._buf[:n]
                self._skip -= n
                if self._skip:
                    return
                self._need = None
                continue
            if len(self._buf) < self._need:
                return
            body = bytes(self._buf[: self._need])
            del self._buf[: self._need]
            self._need = None
            out.append(body)


def encode(body: bytes, framing: Framing | None) -> bytes:
    if framing == "lines":
        return body + b"\n"
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
