"""What ``threadline serve`` reads before the full server exists: the first frame, and
the ``initialize`` answered from it at once (``rpc/boot.py``), handed over to the full
server (``rpc/serve.py``). Only light imports: this runs before pydantic is loaded."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import orjson

from threadline_protocol.quick import certainly_valid_initialize

from .. import __version__
from ..engine.capabilities import initialize_result
from ..providers.registry import ProviderRegistry
from .framing import FrameDecoder, FrameError
from .outbox import Outbox


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
