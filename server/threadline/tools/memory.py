"""Built-in ``remember``/``forget`` tools: durable experiences that survive compaction.

The session stores a fact through the callbacks it gives them (as an
``ExperienceRemember``/``ExperienceForget`` mutation); the compiler puts the
remembered facts in the system context of every later request. The tools only check
what the model asked for, so they know nothing of mutations or the store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import ToolContext, ToolKind, ToolOutcome

Remember = Callable[[str], str]
"""Stores a fact durably and returns its new id."""
Forget = Callable[[str], bool]
"""Drops a stored fact by id; False when there is none."""

MAX_FACT = 500


class RememberTool:
    name = "remember"
    description = (
        "Store a short fact (a decision, a preference, a path) that must survive when "
        "older messages are summarised. Returns the fact's id."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "the fact, one sentence"}},
        "required": ["text"],
    }
    kind: ToolKind = "think"
    parallelizable = False
    needs_permission = False
    timeout = 5.0

    def __init__(self, remember: Remember) -> None:
        self._remember = remember

    def title(self, arguments: dict[str, Any]) -> str:
        return "Remember: " + str(arguments.get("text", ""))[:60]

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return []

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        text = " ".join(str(arguments.get("text", "")).split())
        if not text:
            return ToolOutcome.text("nothing to remember: text is empty", is_error=True)
        if len(text) > MAX_FACT:
            return ToolOutcome.text(
                f"too long: keep a fact under {MAX_FACT} characters", is_error=True
            )
        experience_id = self._remember(text)
        return ToolOutcome.text(f"remembered as {experience_id}")


class ForgetTool:
    name = "forget"
    description = "Drop a stored fact that is no longer true, by its id."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"id": {"type": "string", "description": "the id remember returned"}},
        "required": ["id"],
    }
    kind: ToolKind = "think"
    parallelizable = False
    needs_permission = False
    timeout = 5.0

    def __init__(self, forget: Forget) -> None:
        self._forget = forget

    def title(self, arguments: dict[str, Any]) -> str:
        return f"Forget {arguments.get('id', '')}"

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return []

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        experience_id = str(arguments.get("id", ""))
        if not self._forget(experience_id):
            return ToolOutcome.text(f"no remembered fact with id {experience_id!r}", is_error=True)
        return ToolOutcome.text(f"forgot {experience_id}")
