"""Permission requests (ACP ``session/request_permission``); "always" answers become
kept rules (``approvals.py``), named in the options so the user sees what they cover."""

from __future__ import annotations

import logging
from typing import Any

from threadline_protocol import methods as pm

from ..providers.base import ToolCallFinal
from .approvals import Approvals, describe, new_rule
from .base import Tool, ToolContext

log = logging.getLogger(__name__)


def options_for(tool: Tool, call: ToolCallFinal, now: str) -> list[dict[str, str]]:
    """Allow / always allow / reject / always reject, the "always" ones named by the
    rule they would keep ("Always allow `npm test …`")."""
    allow = new_rule(tool.name, call.arguments, allow=True, now=now)
    reject = new_rule(tool.name, call.arguments, allow=False, now=now)
    return [
        {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "allow_always", "name": describe(allow), "kind": "allow_always"},
        {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
        {"optionId": "reject_always", "name": describe(reject), "kind": "reject_always"},
    ]


class PermissionBroker:
    """Asks the client before a tool runs; keeps "always" answers in ``approvals``."""

    def __init__(self, approvals: Approvals | None = None) -> None:
        kept: list[dict[str, Any]] = []
        self.approvals = approvals or Approvals(lambda: kept, lambda: None)

    async def ask(
        self,
        tool: Tool,
        call: ToolCallFinal,
        ctx: ToolContext,
        shown: list[dict[str, Any]] | None = None,
        *,
        now: str = "",
    ) -> bool:
        """``ctx`` is the call's own context: the request goes to its client, and the
        files it would touch are worked out as the tool will see them. ``shown``: what
        the call would do (an edit's diff), as its ``tool_call`` showed it."""
        options = options_for(tool, call, now)
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
            "options": options,
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
        kind = next((o["kind"] for o in options if o["optionId"] == option), option)
        allowed = kind.startswith("allow")
        if kind.endswith("always"):
            self.approvals.add(new_rule(tool.name, call.arguments, allow=allowed, now=now))
        return allowed


def _locations(tool: Tool, call: ToolCallFinal, ctx: ToolContext) -> list[dict[str, Any]]:
    """The files the call would touch, so the user sees them before allowing it."""
    try:
        return tool.locations(call.arguments, ctx)
    except Exception:
        return []
