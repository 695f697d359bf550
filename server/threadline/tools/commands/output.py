"""A command's output kept to a limit: its head and its tail, and how much fell between.

A test run that prints 100 MB must not fill memory, the store or a context window,
but its first lines (what ran) and its last ones (what failed, the summary) are what
a model needs. So the first :data:`HEAD_BYTES` are kept, then a rolling window of the
last :data:`TAIL_BYTES`, and the text says how many bytes were left out between.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HEAD_BYTES = 8 * 1024
TAIL_BYTES = 24 * 1024


@dataclass(slots=True)
class BoundedOutput:
    head_limit: int = HEAD_BYTES
    tail_limit: int = TAIL_BYTES
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0
    saw_nul: bool = False

    def add(self, data: bytes) -> None:
        self.total += len(data)
        if b"\x00" in data:
            self.saw_nul = True
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > 2 * self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def left_out(self) -> int:
        return max(0, self.total - len(self.head) - min(len(self.tail), self.tail_limit))

    @property
    def binary(self) -> bool:
        """Output with NUL bytes (a binary written to stdout) is not shown as text."""
        return self.saw_nul

    def text(self) -> str:
        """The kept output as text, with the marker where bytes were left out."""
        if self.binary:
            return f"[binary output, {self.total} bytes, not shown]"
        tail = bytes(self.tail[-self.tail_limit :]) if self.tail else b""
        head = self.head.decode("utf-8", "replace")
        if not self.left_out:
            return (bytes(self.head) + tail).decode("utf-8", "replace")
        # Cut the tail at a line start when one is near, so it reads cleanly.
        newline = tail.find(b"\n", 0, 512)
        if newline >= 0:
            cut = newline + 1
            tail = tail[cut:]
        left = self.total - len(self.head) - len(tail)
        return f"{head}\n… {left} bytes left out …\n{tail.decode('utf-8', 'replace')}"
