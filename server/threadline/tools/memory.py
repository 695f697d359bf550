"""Built-in ``remember``/``forget`` tools: durable experiences that survive compaction.

The session keeps the facts (as mutations it commits, so they are durable and shared
with every process on the store); the compiler puts them in the system context of every
later request. The tools see the session only through `Memory`, so tools/ never
imports the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .base import ToolContext, ToolKind, ToolOutcome

MAX_FACT = 500


class Memory(Protocol):
    """The session's durable facts, as the remember/forget tools need them."""

    def remember(self, text: str) -> str:
        """Keep `text`; return the id a later ``forget`` names it by."""
        ...

    def forget(self, experience_id: str) -> None: ...

    def facts(self) -> Mapping[str, str]:
        """The facts kept now, by id."""
        ...


class _MemoryTool:
    """What remember and forget share: a quick step of the model's own thinking, run
    one at a time (each commits to the session), never asking permission."""

    kind: ToolKind = "think"
    parallelizable = False
    needs_permission = False
    timeout = 5.0

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return []


class RememberTool(_MemoryTool):
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

    def title(self, arguments: dict[str, Any]) -> str:
        return "Remember: " + str(arguments.get("text", ""))[:60]

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        text = " ".join(str(arguments.get("text", "")).split())
        if not text:
            return ToolOutcome.text("nothing to remember: text is empty", is_error=True)
        if len(text) > MAX_FACT:
            return ToolOutcome.text(
                f"too long: keep a fact under {MAX_FACT} characters", is_error=True
            )
        experience_id = self._memory.remember(text)
        return ToolOutcome.text(f"remembered as {experience_id}")


class ForgetTool(_MemoryTool):
    name = "forget"
    description = "Drop a stored fact that is no longer true, by its id."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"id": {"type": "string", "description": "the id remember returned"}},
        "required": ["id"],
    }

    def title(self, arguments: dict[str, Any]) -> str:
        return f"Forget {arguments.get('id', '')}"

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        experience_id = str(arguments.get("id", ""))
        if experience_id not in self._memory.facts():
            return ToolOutcome.text(f"no remembered fact with id {experience_id!r}", is_error=True)
        self._memory.forget(experience_id)
        return ToolOutcome.text(f"forgot {experience_id}")
