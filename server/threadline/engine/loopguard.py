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
        self._partial = ""
        self._last = ""
        self._count = 0
        self.triggered = False

    def feed(self, text: str) -> bool:
        """Feed streamed text; returns True once the output is looping."""
        if self.triggered:
            return True
        self._partial += text
        if "\n" not in self._partial:
            if len(self._partial) > 100_000:
                self._partial = self._partial[-10_000:]
            return False
        *lines, self._partial = self._partial.split("\n")
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
