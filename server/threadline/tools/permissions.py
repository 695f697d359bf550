"""Permission requests (ACP ``session/request_permission``) and "always" memory."""

from __future__ import annotations

import logging
from typing import Any

from threadline_protocol import methods as pm

from ..providers.base import ToolCallFinal
from .base import Tool, ToolContext

log = logging.getLogger(__name__)

OPTIONS: list[dict[str, str]] = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"},
]


class PermissionBroker:
    """Asks the client before a tool runs; remembers "always" answers for the session."""

    def __init__(self) -> None:
        self._always: dict[str, bool] = {}

    async def ask(
        self,
        tool: Tool,
        call: ToolCallFinal,
        ctx: ToolContext,
        shown: list[dict[str, Any]] | None = None,
    ) -> bool:
        """``ctx`` is the call's own context: the request goes to its client, and the
        files it would touch are worked out as the tool will see them. ``shown``: what
        the call would do (an edit's diff), as its ``tool_call`` showed it."""
        remembered = self._always.get(tool.name)
        if remembered is not None:
            return remembered
        params: dict[str, Any] = {
            "sessionId": ctx.session_id,
            "toolCall": {
                "toolCallId": call.id,
                "title": tool.title(call.arguments),
                "kind": tool.kind,
                "status": "pending",
                "rawInput": call.arguments,
                "locations": _locations(tool, call, ctx),
                **({"content": shown} if shown else {}),
            },
            "options": OPTIONS,
        }
        try:
            answer = await ctx.link.request_permission(
                pm.RequestPermissionParams.model_validate(params)
            )
        except Exception as exc:  # a client that cannot answer has not allowed anything
            log.info("permission request failed: %s", exc)
            return False
        if not isinstance(answer.outcome, pm.PermissionSelected):
            return False
        option = answer.outcome.option_id
        kind = next((o["kind"] for o in OPTIONS if o["optionId"] == option), option)
        allowed = kind.startswith("allow")
        if kind.endswith("always"):
            self._always[tool.name] = allowed
        return allowed


def _locations(tool: Tool, call: ToolCallFinal, ctx: ToolContext) -> list[dict[str, Any]]:
    """The files the call would touch, so the user sees them before allowing it."""
    try:
        return tool.locations(call.arguments, ctx)
    except Exception:
        return []
