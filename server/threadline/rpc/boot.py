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
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson

from threadline_protocol.quick import certainly_valid_initialize

from .. import __version__
from ..engine.capabilities import initialize_result
from ..logs import setup_logging
from ..providers.registry import ProviderRegistry
from ..settings import HomeUnusable, Settings
from .framing import FrameDecoder, FrameError
from .outbox import Outbox


def protect_stdout() -> BinaryIO:
    """Keep fd 1 for the protocol only: anything else that writes to stdout (a C
    library, a stray print) is sent to stderr instead."""
    proto = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return open(proto, "wb", buffering=0)


@dataclass(slots=True)
class Prelude:
    """What was read before the full server existed, handed over to it."""

    decoder: FrameDecoder
    frames: list[bytes | FrameError] = field(default_factory=list[bytes | FrameError])
    eof: bool = False
    initialized: dict[str, Any] | None = None
    """The params of an ``initialize`` already answered here."""

    @classmethod
    def read(cls, fd: int) -> Prelude:
        """Block until the first complete frame (or end of input)."""
        prelude = cls(FrameDecoder())
        while not prelude.frames:
            try:
                data = os.read(fd, 1 << 16)
            except OSError:
                data = b""
            if not data:
                prelude.eof = True
                break
            prelude.frames = prelude.decoder.feed(data)
        return prelude

    def answer_initialize(self, outbox: Outbox, providers: ProviderRegistry) -> bool:
        """Answer the first frame if it is an ``initialize`` whose params are surely
        valid; it is then taken off :attr:`frames`."""
        first = self.frames[0] if self.frames else None
        if not isinstance(first, bytes):
            return False
        try:
            message = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        if not isinstance(message, dict) or message.get("method") != "initialize":
            return False
        msg_id = message.get("id")
        params = message.get("params")
        if params is None or params == []:
            params = {}
        if (
            message.get("jsonrpc") != "2.0"
            or isinstance(msg_id, bool)
            or not isinstance(msg_id, (str, int))
            or not isinstance(params, dict)
            or not certainly_valid_initialize(params)
        ):
            return False
        outbox.framing = self.decoder.framing
        outbox.send(
            {"jsonrpc": "2.0", "id": msg_id, "result": initialize_result(__version__, providers)}
        )
        self.frames.pop(0)
        self.initialized = params
        return True


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
