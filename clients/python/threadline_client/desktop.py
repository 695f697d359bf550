"""``threadline desktop``: the chat as a local web app.

A small web server on loopback serves the page built from ``editors/desktop`` (the VS
Code chat's own code) and bridges each page's WebSocket to a ``threadline serve`` of
its own, one JSON-RPC message per frame. Like any local web server it must not be
drivable by other web pages the user visits, so, as Jupyter does:

- it listens on 127.0.0.1 only;
- every launch mints a secret token; the page and the WebSocket need it (the URL
  printed and opened carries it);
- the ``Host`` header must name the server itself (no DNS rebinding), and the
  WebSocket's ``Origin`` must be this server's own origin (no cross-site WebSocket).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import html
import mimetypes
import secrets
import sys
import webbrowser
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

STATIC = Path(__file__).parent / "desktop_static"
"""Built by ``editors/desktop`` (``npm ci && npm run build``): index.html, app.js, app.css."""

BUILD_HINT = "cd editors/desktop && npm ci && npm run build"


@dataclass(frozen=True, slots=True)
class Gate:
    """What a request must show to be served: the right Host, Origin and token."""

    port: int
    token: str

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{h}" for h in self.hosts)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def host_ok(self, headers: Headers) -> bool:
        return _single(headers, "Host") in self.hosts

    def origin_ok(self, headers: Headers) -> bool:
        return _single(headers, "Origin") in self.origins

    def token_ok(self, path: str) -> bool:
        given = parse_qs(urlsplit(path).query).get("token", [""])[0]
        return hmac.compare_digest(given.encode(), self.token.encode())


def _single(headers: Headers, name: str) -> str:
    """The header's value, or "" when it is missing or sent more than once."""
    values = headers.get_all(name)
    return values[0] if len(values) == 1 else ""


def _page_headers(content_type: str, length: int, port: int) -> Headers:
    ws = f"ws://127.0.0.1:{port} ws://localhost:{port}"
    return Headers(
        [
            ("Content-Type", content_type),
            ("Content-Length", str(length)),
            ("Cache-Control", "no-store"),
            ("Referrer-Policy", "no-referrer"),
            ("X-Content-Type-Options", "nosniff"),
            (
                "Content-Security-Policy",
                f"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                f"connect-src {ws}; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
            ),
        ]
    )


def _refuse(status: HTTPStatus, text: str) -> Response:
    body = (text + "\n").encode()
    headers = Headers(
        [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
    )
    return Response(status.value, status.phrase, headers, body)


class DesktopServer:
    """The page, its assets and the WebSocket bridge, behind one Gate."""

    def __init__(self, gate: Gate, sidecar: list[str], static: Path = STATIC) -> None:
        self.gate = gate
        self.sidecar = sidecar
        self.static = static
        self.cwd = str(Path.cwd())

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        """Everything but an accepted WebSocket upgrade is answered here."""
        gate = self.gate
        if not gate.host_ok(request.headers):
            return _refuse(HTTPStatus.FORBIDDEN, "wrong Host header")
        path = urlsplit(request.path).path
        if path == "/rpc":
            if not gate.origin_ok(request.headers):
                return _refuse(HTTPStatus.FORBIDDEN, "this origin may not connect")
            if not gate.token_ok(request.path):
                return _refuse(HTTPStatus.FORBIDDEN, "missing or wrong token")
            return None  # go on with the WebSocket handshake
        if path == "/":
            if not gate.token_ok(request.path):
                return _refuse(
                    HTTPStatus.FORBIDDEN, "open the address `threadline desktop` printed"
                )
            return self._file("index.html")
        if path.startswith("/static/"):
            return self._file(path.removeprefix("/static/"))
        return _refuse(HTTPStatus.NOT_FOUND, "not found")

    def _file(self, name: str) -> Response:
        if "/" in name or name.startswith("."):
            return _refuse(HTTPStatus.NOT_FOUND, "not found")
        file = self.static / name
        if not file.is_file():
            return _refuse(HTTPStatus.NOT_FOUND, f"not built: {BUILD_HINT}")
        body = file.read_bytes()
        if name == "index.html":  # new sessions start in the folder the command ran in
            body = body.replace(b"{{cwd}}", html.escape(self.cwd, quote=True).encode())
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind == "application/javascript":
            kind += "; charset=utf-8"
        return Response(200, "OK", _page_headers(kind, len(body), self.gate.port), body)

    async def bridge(self, ws: ServerConnection) -> None:
        """One sidecar per page: frames in are lines to its stdin, lines out are frames."""
        proc = await asyncio.create_subprocess_exec(
            *self.sidecar,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=64 * 1024 * 1024,
        )
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout

        async def to_page() -> None:
            while line := await stdout.readline():
                await ws.send(line.decode().rstrip("\n"))
            # The sidecar is gone: the page is told now, not at its next request.
            code = await proc.wait()
            await ws.close(1011, f"the sidecar exited (code {code})")

        pump = asyncio.create_task(to_page())
        try:
            async for frame in ws:
                text = frame if isinstance(frame, str) else frame.decode()
                stdin.write(text.replace("\n", " ").encode() + b"\n")
                await stdin.drain()
        except (ConnectionClosed, ConnectionError):  # the page left, or the sidecar died
            pass
        finally:
            with contextlib.suppress(Exception):
                stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                proc.kill()
                await proc.wait()
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await pump


async def start(port: int, sidecar: list[str], static: Path = STATIC) -> tuple[Server, Gate]:
    """Listen on 127.0.0.1:``port`` (0: any free port); returns the server and its gate."""
    token = secrets.token_urlsafe(32)
    holder: dict[str, DesktopServer] = {}

    def process_request(connection: ServerConnection, request: Request) -> Response | None:
        return holder["app"].process_request(connection, request)

    async def handler(ws: ServerConnection) -> None:
        await holder["app"].bridge(ws)

    server = await serve(
        handler, "127.0.0.1", port, process_request=process_request, max_size=64 * 1024 * 1024
    )
    bound = next(iter(server.sockets)).getsockname()[1]
    gate = Gate(int(bound), token)
    holder["app"] = DesktopServer(gate, sidecar, static)
    return server, gate


def default_sidecar() -> list[str]:
    return [sys.executable, "-m", "threadline", "serve"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any)")
    parser.add_argument(
        "--no-browser", action="store_true", help="print the address, do not open a browser"
    )


async def _serve(port: int, open_page: Callable[[str], Awaitable[None] | None]) -> None:
    server, gate = await start(port, default_sidecar())
    print(f"Threadline desktop: {gate.url}", flush=True)
    opened = open_page(gate.url)
    if opened is not None:
        await opened
    async with server:
        await server.serve_forever()


def run(args: argparse.Namespace) -> int:
    def open_page(url: str) -> None:
        if not args.no_browser:
            webbrowser.open(url)

    if not (STATIC / "index.html").is_file():
        print(f"threadline desktop: the page is not built; run: {BUILD_HINT}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_serve(args.port, open_page))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:  # the port is taken, or not ours to use
        why = exc.strerror or str(exc)
        print(
            f"threadline desktop: cannot listen on 127.0.0.1:{args.port}: {why}; "
            "pick another --port, or leave it out for any free one",
            file=sys.stderr,
        )
        return 2
    return 0
