"""An MCP stdio server (official SDK) whose tool returns an image, for the image tests."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import ToolAnnotations

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.imagefiles import png

server = MCPServer("shots")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def screenshot(width: int, height: int) -> Image:
    """A screenshot of the given size (a real PNG)."""
    return Image(data=png(width, height, shade=7), format="png")


if __name__ == "__main__":
    server.run()
