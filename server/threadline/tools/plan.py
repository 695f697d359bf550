"""``update_plan``: the model keeps a checklist the user sees (ACP's ``plan`` update).

Each call sends the whole list (ACP replaces the plan with every update). The engine
stores the entries on the call's result (``ToolOutcome.plan``), so the plan is shown
live, replayed by ``session/load`` and kept by a fork, from the same stored block.
"""

from __future__ import annotations

from typing import Any

from .base import ToolContext, ToolKind, ToolOutcome
from .workspace.common import ToolArgError, refusal

PRIORITIES = ("high", "medium", "low")
STATUSES = ("pending", "in_progress", "completed")
MAX_ENTRIES = 50
MAX_ENTRY_CHARS = 500
_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


def parse_entries(arguments: dict[str, Any]) -> list[dict[str, str]]:
    """The entries, checked; a missing priority is ``medium``, a missing status
    ``pending`` (small models leave them out)."""
    raw = arguments.get("entries")
    if not isinstance(raw, list) or not raw:
        raise ToolArgError("entries must be a non-empty list of {content, priority, status}")
    if len(raw) > MAX_ENTRIES:
        raise ToolArgError(f"a plan has at most {MAX_ENTRIES} entries")
    out: list[dict[str, str]] = []
    for i, item in enumerate(raw, 1):
        if isinstance(item, str):
            item = {"content": item}
        if not isinstance(item, dict):
            raise ToolArgError(f"entry {i} must be an object with content")
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            raise ToolArgError(f"entry {i}: content must be a non-empty string")
        priority = item.get("priority") or "medium"
        status = item.get("status") or "pending"
        if priority not in PRIORITIES:
            raise ToolArgError(f"entry {i}: priority must be one of {', '.join(PRIORITIES)}")
        if status not in STATUSES:
            raise ToolArgError(f"entry {i}: status must be one of {', '.join(STATUSES)}")
        out.append(
            {"content": content.strip()[:MAX_ENTRY_CHARS], "priority": priority, "status": status}
        )
    return out


class UpdatePlan:
    """Replace the session's plan with the given checklist."""

    name = "update_plan"
    description = "Keep a plan the user sees: the whole checklist of steps, each with a status."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "entries": {
                "type": "array",
                "description": "Every step, in order",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "description": "The step"},
                        "priority": {"type": "string", "enum": list(PRIORITIES)},
                        "status": {"type": "string", "enum": list(STATUSES)},
                    },
                    "required": ["content"],
                },
            }
        },
        "required": ["entries"],
    }
    kind: ToolKind = "think"
    parallelizable = False
    needs_permission = False
    timeout = 10.0

    def title(self, arguments: dict[str, Any]) -> str:
        entries = arguments.get("entries")
        n = len(entries) if isinstance(entries, list) else 0
        return f"Update plan ({n} steps)" if n else "Update plan"

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return []

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        try:
            entries = parse_entries(arguments)
        except ToolArgError as exc:
            return refusal(exc)
        done = sum(1 for e in entries if e["status"] == "completed")
        lines = [f"{_MARK[e['status']]} {e['content']}" for e in entries]
        outcome = ToolOutcome.text(
            f"Plan updated ({done} of {len(entries)} done):\n" + "\n".join(lines),
            raw={"entries": len(entries), "completed": done},
        )
        outcome.plan = entries
        outcome.compact_summary = f"plan: {done}/{len(entries)} done"
        return outcome
