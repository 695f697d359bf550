"""Server→client requests waiting for the client's answer.

Kept here rather than in pygls' protocol: pygls (2.1) has no public way to forget a
request the server withdrew, and a late answer to one it still holds fails inside
it; a withdrawn request must leave nothing behind, whether or not the client answers.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from threadline_protocol.errors import ErrorCode

from ..engine.link import ClientError

log = logging.getLogger(__name__)


class PendingRequests:
    """Ids for the server's requests (``tl-1``, ``tl-2``…) and the futures their
    answers settle."""

    def __init__(self) -> None:
        self._futures: dict[str | int, asyncio.Future[Any]] = {}
        self._sent = 0

    def __len__(self) -> int:
        return len(self._futures)

    def open(self) -> tuple[str, asyncio.Future[Any]]:
        """A fresh id and the future its answer will settle."""
        self._sent += 1
        msg_id = f"tl-{self._sent}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._futures[msg_id] = future
        return msg_id, future

    def withdraw(self, msg_id: str) -> None:
        """Forget a request the server no longer waits for; its answer is ignored."""
        self._futures.pop(msg_id, None)

    def settle(self, msg_id: str | int, message: dict[str, Any]) -> None:
        """Settle a request with the client's answer (a JSON-RPC response object). An
        ``error`` that is an object fails it with :class:`ClientError` (a code that is
        not an integer reads as -32603); anything else is its ``result``."""
        future = self._futures.pop(msg_id, None)
        if future is None or future.done():
            log.warning("ignored an answer to request %s, which nothing waits for", msg_id)
            return
        err = message.get("error")
        if isinstance(err, dict):
            code = err.get("code")
            future.set_exception(
                ClientError(
                    code if isinstance(code, int) else int(ErrorCode.INTERNAL_ERROR),
                    str(err.get("message", "")),
                    err.get("data"),
                )
            )
        else:
            future.set_result(message.get("result"))
