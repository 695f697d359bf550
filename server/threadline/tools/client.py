"""Client-defined tools: declared at ``session/new``, run by the client via ``tool/call``."""

from __future__ import annotations

from typing import Any

from .base import ToolContext, ToolKind, ToolOutcome


class ClientTool:
    kind: ToolKind = "other"

    def __init__(self, definition: dict[str, Any], timeout: float = 120.0) -> None:
        self.name: str = definition["name"]
        self.description: str = definition.get("description", "")
        self.parameters: dict[str, Any] = definition.get("inputSchema") or {"type": "object"}
        self.parallelizable: bool = bool(definition.get("parallelizable", True))
        self.needs_permission: bool = bool(definition.get("needsApproval", False))
        self.timeout = float(definition.get("timeout", timeout))

    def title(self, arguments: dict[str, Any]) -> str:
        return self.name

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return []

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        result = await ctx.link.request(
            "tool/call",
            {
                "sessionId": ctx.session_id,
                "toolCallId": ctx.tool_call_id,
                "name": self.name,
                "arguments": arguments,
            },
        )
        if not isinstance(result, dict):
            return ToolOutcome.text(f"client returned no result for {self.name}", is_error=True)
        content = result.get("content") or []
        if not isinstance(content, list):
            content = [{"type": "text", "text": str(content)}]
        return ToolOutcome(
            content=[c for c in content if isinstance(c, dict)],
            is_error=bool(result.get("isError", False)),
            raw_output=result,
        )
