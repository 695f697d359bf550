"""Repeated-line detector: stops a model that loops on the same line.

Short lines repeat legitimately (blank lines, ``}``, list bullets), so the number of
repeats that counts as a loop falls as the line grows longer.
"""

from __future__ import annotations


def threshold(line_length: int) -> int:
    """How many consecutive identical lines of this length make a loop."""
    if line_length < 8:
        return 1_000_000  # never: braces, bullets, blank lines
    if line_length < 20:
        return 30
    if line_length < 60:
        return 12
    return 6


class RepeatedLineDetector:
    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._last = ""
        self._count = 0
        self.triggered = False

    def feed(self, text: str) -> bool:
        """Feed streamed text; returns True once the output is looping. Text without a
        newline is only collected (no copying per delta)."""
        if self.triggered:
            return True
        if "\n" not in text:
            self._parts.append(text)
            self._size += len(text)
            if self._size > 100_000:  # one endless line: keep a bounded tail
                tail = "".join(self._parts)[-10_000:]
                self._parts, self._size = [tail], len(tail)
            return False
        self._parts.append(text)
        *lines, partial = "".join(self._parts).split("\n")
        self._parts, self._size = [partial], len(partial)
        for raw in lines:
            line = raw.strip()
            if line and line == self._last:
                self._count += 1
            else:
                self._last = line
                self._count = 1
            if line and self._count >= threshold(len(line)):
                self.triggered = True
                return True
        return False
