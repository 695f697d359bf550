"""The ``threadline`` command: the layer on top of the sidecar and its Python client.

``serve`` is what an editor starts and waits on, so it goes straight to the sidecar's
boot path (``threadline.rpc.boot``) before anything the other commands need (argparse,
the client, rich) is imported; :mod:`threadline_cli.commands` holds the rest.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if words == ["serve"]:
        from threadline.rpc.boot import serve

        return serve()
    from .commands import run

    return run(words)
