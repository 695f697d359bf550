"""A JSON-RPC error answer, raised where a request was sent: by the server when its
client answers one of its requests with an error, by the Python client and by the
benchmarks when the server does.

Plain Python (no pydantic), so a client can raise it without loading the models.
"""

from __future__ import annotations

from typing import Any


class RpcError(Exception):
    """The other side answered a request with a JSON-RPC ``error``; ``str()`` is its
    message (the code is :attr:`code`)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
