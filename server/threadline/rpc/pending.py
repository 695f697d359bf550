"""Server→client requests, kept by pygls' JSON-RPC protocol through its public API.

pygls' ``JsonRPCProtocol.send_request`` writes a request (through ``set_writer``,
into the outbox) and returns the future its answer settles; ``structure_message`` and
``handle_message`` settle it. The rest of the connection (both framings, the envelope
checks, one reply per request) is ours: see ``server.py``.

pygls is imported on the first request, on a worker thread, so the start-up path and
the turns that never ask the client anything (most of them) do not pay for it.

A request the server withdraws stays in pygls' book until the client answers it (ACP
and LSP clients do, with -32800 or a result). Its waiter stops at once; it awaits the
answer shielded, so the late answer settles a future nobody waits for instead of one
already cancelled (which pygls 2.1 cannot take, pygls#621).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from threadline_protocol.errors import ErrorCode

from ..engine.link import ClientError

if TYPE_CHECKING:
    from pygls.protocol import JsonRPCProtocol

log = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], None]


class _OutboxWriter:
    """pygls' ``Writer``: the JSON it writes becomes one outbox message (which frames
    it as this client reads: ``Content-Length`` or one object per line)."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def write(self, data: bytes) -> None:
        # The stdlib reads back what pygls wrote with it, lone surrogates included (a
        # file name need not be valid UTF-8); the outbox writes those as it always does.
        self._send(json.loads(data))

    def close(self) -> None:
        return None


def _open_book(send: Send) -> JsonRPCProtocol:
    from cattrs import Converter
    from pygls.protocol import JsonRPCProtocol, JsonRPCResponseMessage, default_converter
    from pygls.server import JsonRPCServer

    def converter() -> Converter:
        """pygls' converter, except that an answer's ``result`` stays the JSON the
        client sent (pygls would make namedtuples of it); the protocol models read it."""
        made = default_converter()
        made.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
        return made

    protocol = JsonRPCServer(JsonRPCProtocol, converter).protocol
    protocol.set_writer(_OutboxWriter(send), include_headers=False)
    return protocol


def _answer(message: dict[str, Any]) -> dict[str, Any]:
    """The client's answer as a well-formed JSON-RPC response, so pygls can always read
    it: an ``error`` object keeps its code if it is an integer (else -32603) and its
    message as text; anything else is the ``result`` (``null`` when absent)."""
    err = message.get("error")
    if isinstance(err, dict):
        code = err.get("code")
        error: dict[str, Any] = {
            "code": code if isinstance(code, int) else int(ErrorCode.INTERNAL_ERROR),
            "message": str(err.get("message", "")),
        }
        if err.get("data") is not None:
            error["data"] = err["data"]
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": message.get("result")}


def _retrieve(answer: asyncio.Future[Any]) -> None:
    """Mark a withdrawn request's late failure as seen (no "never retrieved" noise)."""
    if not answer.cancelled():
        answer.exception()


class PendingRequests:
    """Ids for the server's requests (``tl-1``, ``tl-2``…) and their answers."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._book: JsonRPCProtocol | None = None
        self._opening: asyncio.Future[JsonRPCProtocol] | None = None
        self._sent = 0

    async def ask(self, method: str, params: Any, withdrawn: Callable[[str], None]) -> Any:
        """Send a request and wait for its ``result``. A client's error answer raises
        :class:`ClientError`; if the waiter is cancelled, ``withdrawn(id)`` tells the
        client before the cancellation goes on."""
        book = await self._protocol()
        from pygls.exceptions import JsonRpcException  # loaded with the book

        self._sent += 1
        msg_id = f"tl-{self._sent}"
        answer = asyncio.wrap_future(book.send_request(method, params, msg_id=msg_id))
        answer.add_done_callback(_retrieve)
        try:
            return await asyncio.shield(answer)
        except asyncio.CancelledError:
            withdrawn(msg_id)
            raise
        except JsonRpcException as exc:
            raise ClientError(exc.code, exc.message, exc.data) from None

    def settle(self, message: dict[str, Any]) -> None:
        """Hand the client's answer (a JSON-RPC response) to the request it answers; an
        answer to nothing this process asked is logged and dropped."""
        if self._book is None:
            log.warning("ignored an answer to request %s, which nothing waits for", message["id"])
            return
        try:
            # Typed Any: pygls' annotations leave its own ResponseErrorMessage out of
            # what handle_message takes, though it handles it (as an error answer).
            structured: Any = self._book.structure_message(_answer(message))
            self._book.handle_message(structured)
        except Exception:
            log.warning("ignored an unreadable answer to request %s", message["id"], exc_info=True)

    async def _protocol(self) -> JsonRPCProtocol:
        book = self._book
        if book is None:
            if self._opening is None:
                self._opening = asyncio.ensure_future(asyncio.to_thread(_open_book, self._send))
            book = await asyncio.shield(self._opening)
            self._book = book
        return book
