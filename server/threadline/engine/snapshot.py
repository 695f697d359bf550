"""A kept fold's bytes (`Transcript.capture` → `Snapshot.assemble` → the store →
`Transcript.restore`), laid out so that restoring costs what the answer needs.

Two values, kept side by side in the store (``folds.data`` and ``folds.replay``):

- **The messages**: a small JSON header (the fold's state and the sections' sizes), a
  newline, then packed sections: the message ids (UTF-8, one per line), each message's
  size in the array and the positions a compaction marks (little-endian 32-bit
  integers), and last the messages as the JSON array ``session/history`` answers.
  Restoring it is one small parse and three array copies: no JSON list of 100,000 ids
  and sizes to parse (~0.3 s at 100,000 messages in format 4, measured).
- **The replay** (each message's ``session/load`` updates): its own small header (the
  projection variants it was made for), each message's code (variant and compaction
  mark) and piece count, each piece's length, then the pieces. Read only when a
  ``session/load`` (or a change) needs it: ``session/history`` reads none of it.

`Transcript.snapshot` (a copy handed to another transcript in the same process) is the
two values end to end; the messages' header says how long the replay after it is.
"""

from __future__ import annotations

import itertools
import sys
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

COMPACTED = b',"compacted":true}'
"""What ends a message's JSON once a compaction marks it (``{**message, "compacted": true}``)."""

SNAPSHOT_FORMAT = 5
"""Bumped whenever what `Snapshot.assemble` writes changes: an older one is not
restored (the log is folded instead, and the fold written again in this format), so a
kept fold never outlives its reader. 4: one value, the ids, sizes and replay lengths as
JSON lists. 5: the replay a value of its own, ids and sizes packed."""

_U32 = next(code for code in "IL" if array(code).itemsize == 4)
_SWAP = sys.byteorder == "big"


def pack(values: Any) -> bytes:
    """Unsigned 32-bit integers, little-endian whatever the machine (a PostgreSQL store
    is shared by machines)."""
    a = array(_U32, values)
    if _SWAP:
        a.byteswap()
    return a.tobytes()


def unpack(data: bytes | memoryview) -> array[int]:
    """`pack`'s integers back; `ValueError` when the length is not a multiple of four."""
    a: array[int] = array(_U32)
    a.frombytes(data)
    if _SWAP:
        a.byteswap()
    return a


def pieces(data: bytes, start: int, sizes: Any, gap: int) -> list[bytes]:
    """The consecutive pieces of ``data`` of these ``sizes`` from ``start``, ``gap``
    bytes apart (a comma)."""
    ends = list(itertools.accumulate((size + gap for size in sizes), initial=start))
    return [data[a : b - gap] for a, b in itertools.pairwise(ends)]


@dataclass(frozen=True, slots=True)
class Folded:
    """A fold as the store keeps it: the messages, and the replay (``None``: none kept,
    as when the projection's variant is not JSON)."""

    messages: bytes
    replay: bytes | None

    def joined(self) -> bytes:
        """Both in one value (`Transcript.snapshot`)."""
        return self.messages + (self.replay or b"")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A transcript's fold as taken by `Transcript.capture`: nothing in it changes
    afterwards (messages' JSON and replay pieces are immutable bytes, the lists and
    state are copies), so it is assembled on any thread."""

    state: dict[str, Any]
    ids: list[str]
    wire: list[bytes]
    replayed: list[tuple[tuple[bool, object], list[bytes]]]
    compacted: set[int]
    """The messages a compaction marks in the history (`Transcript.compacted_indexes`)."""

    @property
    def messages(self) -> int:
        return len(self.wire)

    def assemble(self) -> Folded | None:
        """The values `Transcript.restore` reads; ``None`` when the state is not
        orjson's to write."""
        state = dict(self.state)
        wire, marked = self.wire, sorted(self.compacted)
        if any(b'"compacted"' in wire[i] for i in marked):
            state["marked"] = None  # marked otherwise (`history_json`): kept as they are
            marked = []
        else:
            state["marked"] = len(marked)
            wire = list(wire)
            for i in marked:
                wire[i] = wire[i][:-1] + COMPACTED
        ids = "\n".join(self.ids).encode()
        packed = ids.count(b"\n") == len(self.ids) - 1 if self.ids else True
        state["ids"] = len(ids) if packed else list(self.ids)
        array_json = b"".join([b"[", b",".join(wire), b"]"])
        replay = _replay(self.replayed)
        state["count"] = len(wire)
        state["replayed"] = len(self.replayed) if replay is not None else 0
        state["replayBytes"] = len(replay) if replay is not None else 0
        state["arrayBytes"] = len(array_json)
        try:
            header = orjson.dumps(state)
        except TypeError:
            return None
        sections = [header, b"\n", ids if packed else b"", pack(map(len, wire)), pack(marked)]
        return Folded(b"".join([*sections, array_json]), replay)


def _replay(made: list[tuple[tuple[bool, object], list[bytes]]]) -> bytes | None:
    """The replay value (module docstring); ``None`` when a variant is not JSON."""
    variants: dict[bytes, int] = {}
    codes: list[int] = []
    try:
        for (mark, variant), _ in made:
            key = orjson.dumps(variant)
            codes.append(variants.setdefault(key, len(variants)) * 2 + mark)
    except TypeError:
        return None
    header = b'{"format":%d,"variants":[%s],"messages":%d,"pieces":%d}\n' % (
        SNAPSHOT_FORMAT,
        b",".join(variants),
        len(made),
        sum(len(p) for _, p in made),
    )
    flat = list(itertools.chain.from_iterable(p for _, p in made))
    counts = pack(len(p) for _, p in made)
    return b"".join([header, pack(codes), counts, pack(map(len, flat)), *flat])


class KeptReplay:
    """A restored fold's replay, read (from the store, on first need) and checked only
    when something needs it: ``session/history`` never does."""

    __slots__ = ("_codes", "_counts", "_load", "_pieces", "_variants", "count", "size")

    def __init__(self, count: int, size: int, load: Callable[[], bytes | None]) -> None:
        self.count = count
        """Messages whose replay is kept (as the messages' header says)."""
        self.size = size
        self._load: Callable[[], bytes | None] | None = load
        self._codes: array[int] = array(_U32)
        self._counts: array[int] = array(_U32)
        self._pieces: list[bytes] = []
        self._variants: list[bytes] = []

    def _read(self) -> None:
        load, self._load = self._load, None
        if load is None:
            return
        data = load()
        if data is None or len(data) != self.size or not self._parse(data):
            self.count = 0  # gone or damaged: made again from the messages

    def _parse(self, data: bytes) -> bool:
        try:
            cut = data.index(b"\n")
            header = orjson.loads(data[:cut])
            n, p = header["messages"], header["pieces"]
            if header["format"] != SNAPSHOT_FORMAT or n != self.count:
                return False
            at = cut + 1
            codes = unpack(memoryview(data)[at : at + 4 * n])
            counts = unpack(memoryview(data)[at + 4 * n : at + 8 * n])
            lengths = unpack(memoryview(data)[at + 8 * n : at + 8 * n + 4 * p])
            at += 8 * n + 4 * p
            if len(codes) != n or len(lengths) != p or sum(counts) != p:
                return False
            if at + sum(lengths) != len(data):
                return False
            variants = [orjson.dumps(v) for v in header["variants"]]
            if n and max(codes) >> 1 >= len(variants):
                return False
        except (ValueError, KeyError, TypeError):
            return False
        self._codes, self._counts, self._variants = codes, counts, variants
        self._pieces = pieces(data, at, lengths, 0)
        return True

    def matching(self, n: int, compacted: set[int], variant: object) -> list[bytes] | None:
        """Every piece, when all ``n`` messages' replay is kept, each made for this
        variant and its compaction mark as it is now; else ``None``."""
        self._read()
        if self.count != n:
            return None
        try:
            v = self._variants.index(orjson.dumps(variant))
        except (ValueError, TypeError):
            return None
        expected = array(_U32, [2 * v]) * self.count
        for i in compacted:
            if i < self.count:
                expected[i] += 1
        return list(self._pieces) if expected == self._codes[: self.count] else None

    def made(self, variant: object) -> list[tuple[tuple[bool, object], list[bytes]]]:
        """Each message's (mark, variant) and pieces, as `Transcript` keeps them made;
        a variant kept as JSON that equals ``variant`` as JSON is ``variant``."""
        self._read()
        try:
            mine = orjson.dumps(variant)
        except TypeError:
            mine = b""
        variants = [variant if v == mine else orjson.loads(v) for v in self._variants]
        out: list[tuple[tuple[bool, object], list[bytes]]] = []
        at = 0
        for code, count in zip(self._codes[: self.count], self._counts, strict=False):
            out.append(((bool(code & 1), variants[code >> 1]), self._pieces[at : at + count]))
            at += count
        return out
