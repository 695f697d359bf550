"""The JSON-RPC connection: Threadline's contract over stdin and stdout.

Messages are parsed here, as plain dicts, so no params are lost to typed structuring;
pydantic validates them with each method's model (``routes.py``), and results, which
the engine returns as protocol models, are written as they go on the wire here. What
else the contract needs lives here too: both framings, a response for *every* request
(no params, ``params: []``, invalid params, unknown methods, bad JSON, before
``initialize``), each method served the way the protocol's table says (inline, in
order, or in a task that sends its own answer, so an interrupt is answered only after
the prompt it stopped), server→client requests (``pending.py``, on pygls' protocol), and all output
through the non-blocking outbox.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, BinaryIO, Literal

from pydantic import BaseModel, ValidationError

from threadline_protocol import acp_v2 as v2
from threadline_protocol import methods as pm
from threadline_protocol import work as pw
from threadline_protocol.errors import ErrorCode
from threadline_protocol.methods import ClientCapabilities

from ..engine.engine import Engine
from ..engine.errors import EngineError, as_engine_error
from ..engine.events import Event
from .framing import FrameDecoder, FrameError
from .outbox import Outbox, dumps
from .pending import PendingRequests
from .projection import Projection
from .routes import Route
from .v2 import connection as v2_connection
from .v2.batch import Batches
from .v2.projection import ProjectionV2
from .v2.routes import ROUTES_V2
from .wire import wire

log = logging.getLogger(__name__)

CANCEL_METHODS = ("$/cancelRequest", "$/cancel_request")

CancelMethod = Literal["$/cancel_request", "$/cancelRequest"]


def cancel_notification(method: CancelMethod, request_id: str | int) -> dict[str, Any]:
    """Withdraw a server→client request: ACP's ``$/cancel_request {requestId}`` or
    LSP's ``$/cancelRequest {id}``. Each client library acts only on its own form (the
    ACP SDKs on the first, vscode-jsonrpc and ``vim.lsp.rpc`` on the second)."""
    if method == "$/cancel_request":
        return {"jsonrpc": "2.0", "method": method, "params": {"requestId": request_id}}
    return {"jsonrpc": "2.0", "method": method, "params": {"id": request_id}}


class ThreadlineServer:
    def __init__(
        self,
        engine_factory: Callable[[ThreadlineServer], Engine],
        routes: Mapping[str, Route],
        stdin: BinaryIO,
        stdout: BinaryIO | Outbox,
    ) -> None:
        if isinstance(stdout, Outbox):  # made by rpc/boot.py, which answered initialize
            self.outbox = stdout
            self.outbox.on_broken = self._output_closed
        else:
            self.outbox = Outbox(stdout, on_broken=self._output_closed)
        self._stdin = stdin
        self.routes = routes
        self.pending = PendingRequests(self.outbox.send)
        self.initialized = False
        self.shutting_down = False
        self.client_caps: dict[str, Any] = {}
        self.projection: Projection | ProjectionV2 = Projection.for_client(self.client_caps)
        """What this client is shown of engine events and of history (``initialize``)."""
        self.version = 1
        """The ACP version ``initialize`` negotiated (2: ``rpc/v2``)."""
        self.batches = Batches(lambda replies: self.outbox.send_json(dumps(replies)))
        """JSON-RPC batches, which v2 accepts."""
        self.cancel_method: CancelMethod | None = None
        """Set by ``initialize`` when the client names it; else the framing decides."""
        self.inline_images = True
        """Stored images are sent with their bytes, unless the client asked for
        references (``imageReferences``)."""
        self._tasks: dict[Any, asyncio.Task[None]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.stopped = asyncio.Event()
        self.engine = engine_factory(self)

    # -- ClientLink ----------------------------------------------------------------------

    def announce(self, session_id: str, event: Event) -> None:
        for update in self.projection.session_updates(session_id, event):
            if self.inline_images:
                update = self.engine.images.update(update)
            self.outbox.send_update(session_id, update)

    def notify_updates(self, session_id: str, updates: Sequence[dict[str, Any]]) -> None:
        if self.inline_images:
            updates = [self.engine.images.update(u) for u in updates]
        self.outbox.send_updates(session_id, updates)

    def notify_updates_json(self, session_id: str, updates: Sequence[bytes]) -> None:
        if self.inline_images:
            updates = self.engine.images.updates_json(updates)
        self.outbox.send_updates_json(session_id, updates)

    async def request_permission(
        self, params: pm.RequestPermissionParams
    ) -> pm.RequestPermissionResult:
        answer = await self._request("session/request_permission", params)
        return pm.RequestPermissionResult.model_validate(answer)

    async def read_text_file(self, params: pm.ReadTextFileParams) -> pm.ReadTextFileResult:
        return pm.ReadTextFileResult.model_validate(
            await self._request("fs/read_text_file", params)
        )

    async def write_text_file(self, params: pm.WriteTextFileParams) -> None:
        await self._request("fs/write_text_file", params)

    async def call_tool(self, params: pm.ToolCallCall) -> pm.ToolCallCallResult:
        return pm.ToolCallCallResult.model_validate(await self._request("tool/call", params))

    async def create_elicitation(
        self, params: pm.CreateElicitationParams
    ) -> pm.CreateElicitationResult:
        answer = await self._request("elicitation/create", params)
        return pm.CreateElicitationResult.model_validate(answer)

    async def create_terminal(self, params: pw.CreateTerminalParams) -> pw.CreateTerminalResult:
        answer = await self._request("terminal/create", params)
        return pw.CreateTerminalResult.model_validate(answer)

    async def terminal_output(self, params: pw.TerminalRef) -> pw.TerminalOutputResult:
        answer = await self._request("terminal/output", params)
        return pw.TerminalOutputResult.model_validate(answer)

    async def wait_for_terminal_exit(self, params: pw.TerminalRef) -> pw.WaitForExitResult:
        answer = await self._request("terminal/wait_for_exit", params)
        return pw.WaitForExitResult.model_validate(answer or {})

    async def kill_terminal(self, params: pw.TerminalRef) -> None:
        await self._request("terminal/kill", params)

    async def release_terminal(self, params: pw.TerminalRef) -> None:
        await self._request("terminal/release", params)

    async def _request(self, method: str, params: BaseModel) -> Any:
        """Send a request to the client and wait for its answer's ``result``; a request
        this task stops waiting for is withdrawn (the client may drop its prompt or
        tool run)."""
        payload = wire(params)
        if self.version == 2:
            method, payload = v2_connection.outgoing(method, payload)
        return await self.pending.ask(method, payload, self._withdraw)

    def _withdraw(self, msg_id: str) -> None:
        self.outbox.send(cancel_notification(self.withdraw_method(), msg_id))

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
        self.inline_images = not capabilities.threadline().image_references
        self.initialized = True

    def client_connected_v2(self, params: v2.InitializeRequestV2) -> None:
        """``initialize`` asked for ACP v2: this connection is served v2's methods and
        shown v2's updates from here on (``rpc/v2``); the engine is the same."""
        self.version = 2
        self.routes = ROUTES_V2
        self.client_caps = v2_connection.client_capabilities(params)
        self.projection = ProjectionV2()
        self.cancel_method = "$/cancel_request"
        self.initialized = True

    def note(self, method: str, params: BaseModel | None) -> None:
        """What the connection itself keeps of a request, before the engine serves it:
        the client's capabilities from ``initialize``; that ``shutdown`` began (later
        requests are refused)."""
        if isinstance(params, pm.InitializeParams):
            self.client_connected(params.client_capabilities)
        elif isinstance(params, v2.InitializeRequestV2):
            self.client_connected_v2(params)
        elif method == "shutdown":
            self.shutting_down = True

    def client_capabilities(self) -> dict[str, Any]:
        return self.client_caps

    # -- input ---------------------------------------------------------------------------

    def idle(self) -> bool:
        """No request being served and nothing being written to the client: what
        start-up work done on the loop (`serve.build_when_idle`) waits for."""
        return not self._tasks and self.outbox.idle()

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
        # v2 accepts batches (a batch inside a batch is an invalid entry)
        if isinstance(message, list) and message and self.version == 2 and not self.batches.current:
            with self.batches.collecting():
                for entry in message:
                    self._on_message(entry)
            return
        if not isinstance(message, dict):
            detail = "not an object"
            if isinstance(message, list):
                detail = (
                    "batches are not supported" if self.version != 2 else "an empty or nested batch"
                )
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
        self.pending.settle(message)

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
        route = self.routes.get(method)
        if route is None or route.spec.dispatch != "notification" or not isinstance(params, dict):
            return
        try:
            route.serve(self.engine, route.params(params))
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
        v2_asked = method == "initialize" and v2_connection.wants_v2(params)
        route = (ROUTES_V2 if v2_asked else self.routes).get(method)
        if route is None or route.spec.kind != "request":
            self._send_error(msg_id, ErrorCode.METHOD_NOT_FOUND, f"method not found: {method}")
            return

        def call() -> Any:
            model = route.params(params)
            self.note(method, model)
            return route.serve(self.engine, model)

        if route.spec.dispatch == "inline":
            self._answer(msg_id, call)
            return
        self._tasks[msg_id] = asyncio.ensure_future(self._run(msg_id, call))
        self.batches.later(msg_id)

    def _answer(self, msg_id: Any, call: Callable[[], Any]) -> None:
        """Serve a request inline. One that still has slow work to do (say, starting
        MCP servers) returns an awaitable, which is finished in a task."""
        try:
            result = call()
            if inspect.isawaitable(result):
                awaitable = result
                self._tasks[msg_id] = asyncio.ensure_future(self._run(msg_id, lambda: awaitable))
                self.batches.later(msg_id)
                return
            payload = wire(result)
        except Exception as exc:
            self._send_failure(msg_id, exc)
            return
        self._reply({"jsonrpc": "2.0", "id": msg_id, "result": payload})

    def _reply(self, reply: dict[str, Any]) -> None:
        """Every answer to a request goes out here (kept for its batch's array, if any)."""
        if not self.batches.take(reply):
            self.outbox.send(reply)

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
        elif isinstance(exc, EngineError):
            self._send_error(msg_id, exc.code, exc.message, exc.data)
        else:
            log.exception("request %r failed", msg_id, exc_info=exc)
            self._send_error(msg_id, ErrorCode.INTERNAL_ERROR, f"internal error: {exc}")

    async def _run(self, msg_id: Any, call: Callable[[], Any]) -> None:
        """Serve a request and answer from this same task, exactly once, whatever fails."""
        answered = False
        try:
            result = call()
            if inspect.isawaitable(result):
                result = await result
            payload = wire(result)
        except asyncio.CancelledError:
            answered = True
            self._send_error(msg_id, ErrorCode.REQUEST_CANCELLED, "request cancelled")
        except Exception as exc:
            answered = True
            self._send_failure(msg_id, exc)
        else:
            answered = True
            self._reply({"jsonrpc": "2.0", "id": msg_id, "result": payload})
        finally:
            self._tasks.pop(msg_id, None)
            if not answered:  # a BaseException other than cancellation
                self._send_error(msg_id, ErrorCode.INTERNAL_ERROR, "internal error")

    def _send_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": int(code), "message": message}
        if data is not None:
            error["data"] = data
        self._reply({"jsonrpc": "2.0", "id": msg_id, "error": error})

    async def cancel_all_requests(self) -> None:
        tasks = [t for t in self._tasks.values() if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2)


def _describe(err: Any) -> str:
    loc = ".".join(str(p) for p in err.get("loc", ())) or "params"
    return f"{loc}: {err.get('msg', 'invalid')}"
