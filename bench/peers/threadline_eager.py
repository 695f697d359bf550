"""``threadline serve`` importing everything before it reads ``initialize``.

The cold-start figure's reference for the early answer (``threadline/rpc/boot.py``):
the same server, but pygls, pydantic, the engine and the store are imported first, as
before the boot path existed. Comparing the time to a first prompt's answer shows what
the early ``initialize`` costs a client that prompts at once (the imports still have to
happen, only later).

Run: ``python bench/peers/threadline_eager.py`` (same environment as ``threadline serve``).
"""

from __future__ import annotations

from importlib import import_module

from threadline.rpc.boot import serve

import_module("threadline.rpc.serve")  # the heavy imports, up front

if __name__ == "__main__":
    raise SystemExit(serve())
