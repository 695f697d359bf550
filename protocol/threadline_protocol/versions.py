"""The protocol versions, apart from the models so ``initialize`` can be answered
before pydantic is imported (see ``threadline.rpc.boot``)."""

from __future__ import annotations

PROTOCOL_VERSION = 1
"""ACP protocol version spoken."""

THREADLINE_PROTOCOL_VERSION = "0.1"
"""Version of Threadline's extension block (``_meta.threadline``)."""
