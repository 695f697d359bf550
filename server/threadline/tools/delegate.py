"""``delegate``: the model hands a task to a child session and gets its answer back.

The child is a real session (stored, listed, loadable, forkable) that runs its own
turn: ``context: "fork"`` starts it as a fork of the calling session at this point (it
knows everything the parent knows, at the cost of one row), ``"fresh"`` with only the
task. Its tools are at most the parent's (``tools`` narrows them), its mode and kept
approvals are the parent's, and its final answer is this call's result. The engine
does the work (`engine/children.py`), behind the `Delegator` seam: a tool knows
nothing of sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .base import ToolContext, ToolKind, ToolOutcome

DELEGATE = "delegate"
WAIT = 6 * 3600.0
"""Seconds a child may run: it is a whole turn with its own budget; an interrupt ends it."""

Context = Literal["fork", "fresh"]

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "description": "What the sub-agent is to do and what it should report back.",
        },
        # No "enum" here: llama.cpp's server (llama_cpp.server, the tool-calling chat
        # format) ended the stream with no finish reason whenever this tool was offered
        # with one. The description names the two values; anything else is "fresh".
        "context": {
            "type": "string",
            "description": (
                "fork: the sub-agent starts knowing this whole conversation; "
                "fresh: it starts with only the task (default)."
            ),
        },
        "tools": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Names of the tools it may use (default: all of yours).",
        },
        "model": {"type": "string", "description": "Another model for it (optional)."},
    },
    "required": ["task"],
}


@dataclass(frozen=True, slots=True)
class DelegateRequest:
    task: str
    context: Context = "fresh"
    tools: tuple[str, ...] | None = None
    model: str | None = None

    @classmethod
    def of(cls, arguments: dict[str, Any]) -> DelegateRequest:
        tools = arguments.get("tools")
        context: Context = "fork" if arguments.get("context") == "fork" else "fresh"
        return cls(
            task=str(arguments["task"]),
            context=context,
            tools=None if tools is None else tuple(str(t) for t in tools),
            model=str(arguments["model"]) if arguments.get("model") else None,
        )


class Delegator(Protocol):
    """Runs a child session for one call (``engine/children.py``). The outcome is the
    child's final answer, or an error saying why there is none (refused, failed,
    out of budget, interrupted); ``ToolOutcome.usage`` carries what the child spent."""

    async def delegate(self, request: DelegateRequest, ctx: ToolContext) -> ToolOutcome: ...

    def may_delegate(self, depth: int) -> bool:
        """Whether a session ``depth`` children deep may start another (the depth limit):
        the tool is offered only then, and refused otherwise."""
        ...


class Delegate:
    """The ``delegate`` tool. Parallelizable: independent children in one answer run
    at once (the engine bounds how many)."""

    name = DELEGATE
    description = (
        "Delegate a task to a sub-agent: a child session with its own context that "
        "works on its own (search the codebase, read many files, try an approach) and "
        "reports back a summary answer. Use it for a large or separate sub-task."
    )
    parameters = PARAMETERS
    kind: ToolKind = "other"
    parallelizable = True
    needs_permission = False
    timeout = WAIT

    def __init__(self, delegator: Delegator) -> None:
        self._delegator = delegator

    def title(self, arguments: dict[str, Any]) -> str:
        task = " ".join(str(arguments.get("task") or "").split())
        return f"Delegate: {task[:80]}" if task else "Delegate a task"

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return []

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        return await self._delegator.delegate(DelegateRequest.of(arguments), ctx)
