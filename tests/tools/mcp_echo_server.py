"""A tiny MCP server for the tests, written with the official SDK.

Run as ``python tests/tools/mcp_echo_server.py`` for stdio; every tool is
deterministic so the tests can check exact results. ``ECHO_PREFIX`` in the
environment shows that the ``env`` of an ACP ``mcpServers`` entry reaches the server.

``--transport http|sse --port-file F [--require NAME=VALUE]`` serves the same tools
over the SDK's streamable HTTP or SSE app on a free loopback port, written to ``F``
once the socket listens; with ``--require`` every request without that header is
answered 401 (so the tests see that an entry's ``headers`` reach the server).
"""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("echo")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Return the text unchanged (prefixed with $ECHO_PREFIX when set)."""
    return os.environ.get("ECHO_PREFIX", "") + text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason (a deliberate error the model sees)."""
    raise ToolError(reason)


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer; for timeout and cancellation tests."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def where() -> str:
    """The server's working directory."""
    return os.getcwd()


@server.tool(name="dotted.name")
def dotted() -> str:
    """A tool whose name needs sanitising for model APIs."""
    return "ok"


class RequireHeader:
    """ASGI middleware: 401 for any HTTP request that lacks the header."""

    def __init__(self, app: Any, name: str, value: str) -> None:
        self.app = app
        self.name = name.lower().encode()
        self.value = value.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(self.name) != self.value:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing header"})
            return
        await self.app(scope, receive, send)


def serve_http(transport: str, port_file: Path, require: str | None) -> None:
    import uvicorn

    app: Any = server.sse_app() if transport == "sse" else server.streamable_http_app()
    if require:
        name, _, value = require.partition("=")
        app = RequireHeader(app, name, value)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    partial = port_file.with_suffix(".partial")
    partial.write_text(str(sock.getsockname()[1]))
    partial.rename(port_file)  # whole or absent for the reader
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--port-file", type=Path)
    parser.add_argument("--require")
    options = parser.parse_args()
    if options.transport == "stdio":
        server.run()
    else:
        assert options.port_file is not None, "--port-file is needed for http and sse"
        serve_http(options.transport, options.port_file, options.require)
