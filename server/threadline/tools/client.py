"""Client-defined tools: declared at ``session/new``, run by the client via ``tool/call``."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from threadline_protocol import methods as pm

from .base import ToolContext, ToolKind, ToolOutcome


class ClientTool:
    kind: ToolKind = "other"

    def __init__(self, definition: dict[str, Any], timeout: float = 120.0) -> None:
        self.name: str = definition["name"]
        self.description: str = definition.get("description", "")
        self.parameters: dict[str, Any] = definition.get("inputSchema") or {"type": "object"}
        self.parallelizable: bool = bool(definition.get("parallelizable", True))
        self.needs_permission: bool = bool(definition.get("needsApproval", False))
        self.mutating: bool = bool(definition.get("mutating", False))
        """Declared by the client: a call may change the workspace (checkpointed)."""
        self.timeout = float(definition.get("timeout", timeout))

    def title(self, arguments: dict[str, Any]) -> str:
        return self.name

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return []

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        call = pm.ToolCallCall(
            session_id=ctx.session_id,
            tool_call_id=ctx.tool_call_id,
            name=self.name,
            arguments=arguments,
        )
        try:
            answer = await ctx.link.call_tool(call)
        except ValidationError as exc:
            # Nothing the client sent reaches the transcript unless it is valid.
            problems = "; ".join(_describe(e) for e in exc.errors(include_url=False)[:5])
            return ToolOutcome.text(
                f"{self.name} failed: the client's answer to tool/call is not valid ({problems})",
                is_error=True,
            )
        return ToolOutcome(
            content=[block.wire() for block in answer.content],
            is_error=answer.is_error,
            raw_output=answer.model_dump(by_alias=True, exclude_unset=True),
        )


def _describe(err: ErrorDetails) -> str:
    where = ".".join(str(p) for p in err["loc"]) or "result"
    return f"{where}: {err['msg']}"
