"""Tools the chat itself defines and answers (``tool/call``), offered at ``session/new``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

ToolHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class ChatTool:
    """A client-defined tool the chat offers the model; ``handler`` answers ``tool/call``
    with ``{content: ContentBlock[], isError?}``."""

    name: str
    description: str
    handler: ToolHandler
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    needs_approval: bool = False
    always_offer: bool = False
    """Offer it on every model call, not only when the request is about it."""

    def wire(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "needsApproval": self.needs_approval,
            "alwaysOffer": self.always_offer,
        }
