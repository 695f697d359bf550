"""JSON text made earlier and spliced as is into an answer (a long history)."""

from __future__ import annotations


class RawJSON:
    """Valid JSON text. The outbox writes it unchanged (``orjson.Fragment``); when an
    answer needs the stdlib writer (a lone surrogate in a client's id) it is parsed
    back first, so the answer is the same either way. Not a dataclass: orjson would
    write a dataclass's fields instead of asking the outbox."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data
