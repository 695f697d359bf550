"""A tiny MCP stdio server for the tests, written with the official SDK.

Run as ``python tests/tools/mcp_echo_server.py``; every tool is deterministic so the
tests can check exact results. ``ECHO_PREFIX`` in the environment shows that the
``env`` of an ACP ``mcpServers`` entry reaches the server.
"""

from __future__ import annotations

import os

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


if __name__ == "__main__":
    server.run()
