"""The cyclic garbage collector paused around work that allocates many containers and
makes no cycles: folding or restoring a long transcript, compiling its request.

Meanwhile the collector would run over and over, now and then over the whole heap (a
fresh server's modules: ~80 ms of a 110 ms restore at 10,000 messages; a long
session's request: ~0.8 s of 1.4 s at 100,000 messages in a bare process, more in a
server that holds a few such transcripts, measured). Reference counting still frees
what is dropped meanwhile.
"""

from __future__ import annotations

import gc
from collections.abc import Generator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Generator[None]:
    """The collector off for the ``with`` block (left off if it was off already)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
