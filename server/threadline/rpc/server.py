"""The JSON-RPC connection: pygls' server and protocol, adapted to Threadline's contract.

pygls keeps the request bookkeeping for server→client requests (futures, response
matching) and the cattrs converter. Messages are parsed here, as plain dicts, so no
params are lost to typed structuring; pydantic validates them in the handlers.
What else the contract needs lives here too: both framings, a response for *every*
request (no params, ``params: []``, invalid params, unknown methods, bad JSON, before
``initialize``), responses sent from the request's own task (so an interrupt is
answered only after the prompt it stopped), and all output through the non-blocking
outbox.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, BinaryIO, Literal

from lsprotocol.types import ResponseError
from pydantic import ValidationError
from pygls.protocol import JsonRPCProtocol, default_converter
from pygls.server import JsonRPCServer

from threadline_protocol.errors import ErrorCode
from threadline_protocol.methods import ClientCapabilities

from ..engine.engine import Engine
from ..engine.errors import EngineError, as_engine_error
from ..engine.events import Event
from .framing import FrameDecoder, FrameError
from .outbox import Outbox
from .projection import Projection

log = logging.getLogger(__name__)

AsyncHandler = Callable[["ThreadlineServer", dict[str, Any]], Awaitable[Any]]
SyncHandler = Callable[["ThreadlineServer", dict[str, Any]], Any]
Handler = AsyncHandler | SyncHandler
"""Synchronous handlers answer inline, so pipelined requests keep their order
(``session/new`` then ``session/prompt`` in one write); async ones get a task."""
NotificationHandler = Callable[["ThreadlineServer", dict[str, Any]], None]

CANCEL_METHODS = ("$/cancelRequest", "$/cancel_request")

CancelMethod = Literal["$/cancel_request", "$/cancelRequest"]


def cancel_notification(method: CancelMethod, request_id: str | int) -> dict[str, Any]:
    """Withdraw a server→client request: ACP's ``$/cancel_request {requestId}`` or
    LSP's ``$/cancelRequest {id}``. Each client library acts only on its own form (the
    ACP SDKs on the first, vscode-jsonrpc and ``vim.lsp.rpc`` on the second)."""
    if method == "$/cancel_request":
        return {"jsonrpc": "2.0", "method": method, "params": {"requestId": request_id}}
    return {"jsonrpc": "2.0", "method": method, "params": {"id": request_id}}


class ThreadlineProtocol(JsonRPCProtocol):
    """Routes pygls' own sends (server→client requests) into the outbox."""

    outbox: Outbox | None = None

    def _send_data(self, data: Any) -> None:
        if not data or self.outbox is None:
            return
        if hasattr(data, "__attrs_attrs__"):
            data = self._converter.unstructure(data)
        self.outbox.send(data)


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class ThreadlineServer(JsonRPCServer):
    protocol: ThreadlineProtocol  # pyright: ignore[reportIncompatibleVariableOverride]

    def __init__(
        self,
        engine_factory: Callable[[ThreadlineServer], Engine],
        handlers: dict[str, Handler],
        notifications: dict[str, NotificationHandler],
        stdin: BinaryIO,
        stdout: BinaryIO | Outbox,
    ) -> None:
        super().__init__(ThreadlineProtocol, default_converter)
        if isinstance(stdout, Outbox):  # made by rpc/boot.py, which answered initialize
            self.outbox = stdout
            self.outbox.on_broken = self._output_closed
        else:
            self.outbox = Outbox(stdout, on_broken=self._output_closed)
        self.protocol.outbox = self.outbox
        self._stdin = stdin
        self.handlers = handlers
        self.notifications = notifications
        self.initialized = False
        self.shutting_down = False
        self.client_caps: dict[str, Any] = {}
        self.projection = Projection.for_client(self.client_caps)
        """What this client is shown of engine events and of history (``initialize``)."""
        self.cancel_method: CancelMethod | None = None
        """Set by ``initialize`` when the client names it; else the framing decides."""
        self._tasks: dict[Any, asyncio.Task[None]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._next_request = 0
        self.stopped = asyncio.Event()
        self.engine = engine_factory(self)

    # -- ClientLink ----------------------------------------------------------------------

    def announce(self, session_id: str, event: Event) -> None:
        for update in self.projection.updates(event):
            self.outbox.send_update(session_id, update)

    def notify_updates(self, session_id: str, updates: Sequence[dict[str, Any]]) -> None:
        self.outbox.send_updates(session_id, updates)

    def notify_updates_json(self, session_id: str, updates: Sequence[bytes]) -> None:
        self.outbox.send_updates_json(session_id, updates)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self._next_request += 1
        msg_id = f"tl-{self._next_request}"
        future = self.protocol.send_request(method, params, msg_id=msg_id)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            # Withdraw the request: the client may drop its prompt or tool run.
            self.protocol._request_futures.pop(msg_id, None)
            self.outbox.send(cancel_notification(self.withdraw_method(), msg_id))
            raise

    def withdraw_method(self) -> CancelMethod:
        """What the client named at ``initialize``, else its framing decides: one JSON
        object per line is ACP's transport, ``Content-Length`` headers are LSP's."""
        if self.cancel_method is not None:
            return self.cancel_method
        return "$/cancel_request" if self.outbox.framing == "lines" else "$/cancelRequest"

    def client_connected(self, capabilities: ClientCapabilities) -> None:
        """Remember what ``initialize`` said about the client."""
        self.client_caps = capabilities.wire()
        self.projection = Projection.for_client(self.client_caps)
        self.cancel_method = capabilities.threadline().cancel_method
        self.initialized = True

    def client_capabilities(self) -> dict[str, Any]:
        return self.client_caps

    # -- input ---------------------------------------------------------------------------

    def start_reader(
        self,
        loop: asyncio.AbstractEventLoop,
        decoder: FrameDecoder | None = None,
        frames: Sequence[bytes | FrameError] = (),
        *,
        eof: bool = False,
    ) -> None:
        """Read stdin from here on; ``decoder``, ``frames`` and ``eof`` are what was
        read before (``rpc/boot.py``), handled first."""
        self._loop = loop
        decoder = decoder or FrameDecoder()
        if decoder.framing is not None and self.outbox.framing is None:
            self.outbox.framing = decoder.framing
        if frames:
            loop.call_soon(self._on_frames, list(frames))
        if eof:
            loop.call_soon(self._on_eof)
            return
        threading.Thread(
            target=self._read_stdin, args=(decoder,), name="threadline-stdin", daemon=True
        ).start()

    def _to_loop(self, callback: Callable[..., None], *args: Any) -> bool:
        """Hand work from another thread to the event loop; False once the loop is
        closed (the server stopped while a read or write was under way)."""
        loop = self._loop
        if loop is None:
            return False
        try:
            loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:
            return False
        return True

    def _read_stdin(self, decoder: FrameDecoder) -> None:
        """Blocking reads on a thread of its own; frames are handed to the event loop,
        and the next read waits until the loop has handled them. So a client that
        writes faster than the server works is held back by the pipe, not buffered
        without bound, and a stop (``exit``) is never queued behind a backlog.
        ``decoder`` carries what ``rpc/boot.py`` read before."""
        fd = self._stdin.fileno()
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except OSError:
                data = b""
            if not data:
                self._to_loop(self._on_eof)
                return
            frames = decoder.feed(data)
            if decoder.framing is not None and self.outbox.framing is None:
                self.outbox.framing = decoder.framing
            if not frames:
                continue
            handled = threading.Event()
            if not self._to_loop(self._on_frames, frames, handled):
                return
            while not handled.wait(1.0):
                if self._loop is None or self._loop.is_closed():
                    return

    def _on_eof(self) -> None:
        log.info("stdin closed; stopping")
        self.stopped.set()

    def _output_closed(self) -> None:
        """Called on the outbox's thread: a client that closed our stdout is gone,
        just as one that closed our stdin, so the server stops the same way (turns
        record what they had, then it exits)."""
        self._to_loop(self._on_output_closed)

    def _on_output_closed(self) -> None:
        log.info("stdout closed; stopping")
        self.stopped.set()

    def _on_frames(
        self, frames: list[bytes | FrameError], handled: threading.Event | None = None
    ) -> None:
        try:
            self._handle_frames(frames)
        finally:
            if handled is not None:
                handled.set()

    def _handle_frames(self, frames: list[bytes | FrameError]) -> None:
        for frame in frames:
            if isinstance(frame, FrameError):
                self._send_error(None, ErrorCode.INVALID_REQUEST, frame.message)
                continue
            try:
                message = json.loads(frame)
            except (ValueError, RecursionError) as exc:
                # ValueError covers bad JSON, bad UTF-8 and integers over 4,300 digits;
                # RecursionError, nesting deeper than the parser goes.
                self._send_error(None, ErrorCode.PARSE_ERROR, f"parse error: {exc}"[:500])
                continue
            try:
                self._on_message(message)
            except Exception:
                log.exception("failed to handle a message")
                mid = message.get("id") if isinstance(message, dict) else None
                self._send_error(mid, ErrorCode.INTERNAL_ERROR, "internal error")

    def _on_message(self, message: Any) -> None:
        if not isinstance(message, dict):
            detail = "batches are not supported" if isinstance(message, list) else "not an object"
            self._send_error(None, ErrorCode.INVALID_REQUEST, f"invalid request: {detail}")
            return
        msg_id = message.get("id")
        has_id = "id" in message
        if (has_id and not (msg_id is None or isinstance(msg_id, (str, int)))) or isinstance(
            msg_id, bool
        ):
            self._send_error(None, ErrorCode.INVALID_REQUEST, "invalid request: bad id")
            return
        method = message.get("method")
        if message.get("jsonrpc") != "2.0":
            # Not even a notification: answer (with id null when there is none).
            self._send_error(
                msg_id, ErrorCode.INVALID_REQUEST, 'invalid request: jsonrpc must be "2.0"'
            )
            return
        if method is None and has_id and ("result" in message or "error" in message):
            self._on_response(message)
            return
        if not isinstance(method, str):
            self._send_error(msg_id, ErrorCode.INVALID_REQUEST, "invalid request: no method")
            return
        params = message.get("params")
        if params is None or params == []:
            params = {}
        if not has_id:
            self._on_notification(method, params)
            return
        if not isinstance(params, dict):
            self._send_error(msg_id, ErrorCode.INVALID_PARAMS, "params must be an object")
            return
        self._on_request(msg_id, method, params)

    def _on_response(self, message: dict[str, Any]) -> None:
        err = message.get("error")
        if isinstance(err, dict):
            code = err.get("code")
            error = ResponseError(
                code=code if isinstance(code, int) else int(ErrorCode.INTERNAL_ERROR),
                message=str(err.get("message", "")),
                data=err.get("data"),
            )
            self.protocol._handle_response(message["id"], None, error)
        else:
            self.protocol._handle_response(message["id"], message.get("result"))

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "exit":
            self.stopped.set()
            return
        if not self.initialized:
            return
        if method in CANCEL_METHODS:
            target = params.get("id", params.get("requestId")) if isinstance(params, dict) else None
            if isinstance(target, (str, int)):
                task = self._tasks.get(target)
                if task is not None:
                    task.cancel()
            return
        handler = self.notifications.get(method)
        if handler is None or not isinstance(params, dict):
            return
        try:
            handler(self, params)
        except (ValidationError, EngineError) as exc:
            log.info("ignored notification %s: %s", method, exc)

    def _on_request(self, msg_id: Any, method: str, params: dict[str, Any]) -> None:
        if msg_id in self._tasks:
            self._send_error(msg_id, ErrorCode.INVALID_REQUEST, f"request id {msg_id!r} is in use")
            return
        if method != "initialize" and not self.initialized:
            self._send_error(msg_id, ErrorCode.INVALID_REQUEST, "not initialized")
            return
        if self.shutting_down:
            self._send_error(msg_id, ErrorCode.INVALID_REQUEST, "server is shutting down")
            return
        handler = self.handlers.get(method)
        if handler is None:
            self._send_error(msg_id, ErrorCode.METHOD_NOT_FOUND, f"method not found: {method}")
            return
        if not inspect.iscoroutinefunction(handler):
            self._answer(msg_id, lambda: handler(self, params))
            return
        task = asyncio.ensure_future(self._run(msg_id, handler, params))
        self._tasks[msg_id] = task

    def _answer(self, msg_id: Any, call: Callable[[], Any]) -> None:
        """Run a synchronous handler inline. One that still has slow work to do (say,
        starting MCP servers) returns an awaitable, which is finished in a task."""
        try:
            result = call()
        except Exception as exc:
            self._send_failure(msg_id, exc)
            return
        if inspect.isawaitable(result):
            awaitable = result

            async def finish(server: ThreadlineServer, params: dict[str, Any]) -> Any:
                return await awaitable

            self._tasks[msg_id] = asyncio.ensure_future(self._run(msg_id, finish, {}))
            return
        self.outbox.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def _send_failure(self, msg_id: Any, exc: Exception) -> None:
        """Answer a failed request. The last resort is a bare -32603: building the
        answer must never be what leaves a request unanswered."""
        try:
            self._send_exception(msg_id, exc)
        except Exception:
            log.exception("could not describe the failure of request %r", msg_id)
            self._send_error(msg_id, ErrorCode.INTERNAL_ERROR, "internal error")

    def _send_exception(self, msg_id: Any, exc: Exception) -> None:
        exc = as_engine_error(exc) or exc
        if isinstance(exc, ValidationError):
            # errors(), not json(): pydantic's JSON encoder raises on a lone surrogate
            # in the input it quotes; the outbox escapes those.
            errors = exc.errors(include_url=False, include_context=False)
            self._send_error(
                msg_id,
                ErrorCode.INVALID_PARAMS,
                "invalid params: " + "; ".join(_describe(e) for e in errors),
                [dict(e) for e in errors],
            )
        elif isinstance(exc, (EngineError, RpcError)):
            self._send_error(msg_id, exc.code, exc.message, exc.data)
        else:
            log.exception("request %r failed", msg_id, exc_info=exc)
            self._send_error(msg_id, ErrorCode.INTERNAL_ERROR, f"internal error: {exc}")

    async def _run(self, msg_id: Any, handler: AsyncHandler, params: dict[str, Any]) -> None:
        """Run a handler and answer from this same task, exactly once, whatever fails."""
        answered = False
        try:
            result = await handler(self, params)
        except asyncio.CancelledError:
            answered = True
            self._send_error(msg_id, ErrorCode.REQUEST_CANCELLED, "request cancelled")
        except Exception as exc:
            answered = True
            self._send_failure(msg_id, exc)
        else:
            answered = True
            self.outbox.send({"jsonrpc": "2.0", "id": msg_id, "result": result})
        finally:
            self._tasks.pop(msg_id, None)
            if not answered:  # a BaseException other than cancellation
                self._send_error(msg_id, ErrorCode.INTERNAL_ERROR, "internal error")

    def _send_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": int(code), "message": message}
        if data is not None:
            error["data"] = data
        self.outbox.send({"jsonrpc": "2.0", "id": msg_id, "error": error})

    async def cancel_all_requests(self) -> None:
        tasks = [t for t in self._tasks.values() if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2)


def _describe(err: Any) -> str:
    loc = ".".join(str(p) for p in err.get("loc", ())) or "params"
    return f"{loc}: {err.get('msg', 'invalid')}"
