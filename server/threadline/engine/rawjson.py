"""JSON text made earlier and spliced as is into an answer (a long history)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RawJSON:
    """Valid JSON text. The outbox writes it unchanged (``orjson.Fragment``); when an
    answer needs the stdlib writer (a lone surrogate in a client's id) it is parsed
    back first, so the answer is the same either way."""

    data: bytes
