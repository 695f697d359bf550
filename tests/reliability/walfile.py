"""Just enough of SQLite's WAL file format to tear it at meaningful places.

Layout (https://www.sqlite.org/fileformat.html#the_write_ahead_log): a 32-byte header
(magic, format version, page size, checkpoint sequence, two salts, two checksums),
then frames of a 24-byte header (page number, database size in pages *for a commit
frame, else 0*, the salts, two cumulative checksums) followed by one page.

On open after a crash, SQLite reads frames from the start while their salts match
the header and their cumulative checksums verify, and keeps everything up to the
last *commit* frame among them: a transaction is there whole or not at all, and a
damaged frame hides every frame after it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

HEADER = 32
FRAME_HEADER = 24


@dataclass(frozen=True)
class WalLayout:
    size: int
    page_size: int
    frames: int
    commit_ends: list[int]
    """Byte offsets just past each commit frame: the consistent cut points."""

    @property
    def frame_size(self) -> int:
        return FRAME_HEADER + self.page_size

    def frame_start(self, index: int) -> int:
        return HEADER + index * self.frame_size


def read_layout(path: Path) -> WalLayout:
    data = path.read_bytes()
    magic, _version, page_size = struct.unpack(">III", data[:12])
    if magic not in (0x377F0682, 0x377F0683):
        raise ValueError(f"{path} is not a WAL file (magic {magic:#x})")
    salts = data[16:24]
    frame_size = FRAME_HEADER + page_size
    commit_ends: list[int] = []
    frames = 0
    offset = HEADER
    while offset + frame_size <= len(data):
        header = data[offset : offset + FRAME_HEADER]
        if header[8:16] != salts:
            break  # a stale frame from before the last WAL reset
        frames += 1
        if struct.unpack(">I", header[4:8])[0] != 0:
            commit_ends.append(offset + frame_size)
        offset += frame_size
    return WalLayout(len(data), page_size, frames, commit_ends)
