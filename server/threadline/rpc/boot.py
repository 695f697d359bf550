"""``threadline serve`` up to the ``initialize`` answer, before the heavy imports.

An editor starts a sidecar per window (Zed, per agent thread) and waits for
``initialize``; its answer depends only on the version, the user config and the
client's capabilities. So this module reads the first message with nothing but the
stdlib, orjson, the framing and the provider registry loaded, answers a valid
``initialize`` at once, and only then imports pygls, pydantic, the engine and the store
(``rpc/serve.py``) while the client reads the answer. Everything else (a first message
that is not ``initialize``, params the plain check is not sure of) goes the full way,
unchanged: the full server handles the frames this module read.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from ..logs import setup_logging
from ..providers.registry import ProviderRegistry
from ..settings import HomeUnusable, Settings
from .outbox import Outbox
from .prelude import Prelude


def protect_stdout() -> BinaryIO:
    """Keep fd 1 for the protocol only: anything else that writes to stdout (a C
    library, a stray print) is sent to stderr instead."""
    proto = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return open(proto, "wb", buffering=0)


def serve(stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    settings = Settings.from_env()
    try:
        settings.prepare_home()
        setup_logging(settings)
    except HomeUnusable as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the log file itself (the folder was writable)
        print(
            f"threadline: cannot write the log file {settings.log_path} "
            f"({exc.strerror or exc}); make it writable or set THREADLINE_HOME to "
            "another folder",
            file=sys.stderr,
        )
        return 2
    outbox = Outbox(stdout or protect_stdout())
    source = stdin or sys.stdin.buffer
    prelude = Prelude.read(source.fileno())
    providers = ProviderRegistry(settings.default_model)
    prelude.answer_initialize(outbox, providers)
    from .serve import run  # the heavy imports, while the client reads the answer

    return run(settings, outbox, providers, source, prelude)
