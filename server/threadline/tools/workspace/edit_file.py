"""``edit_file``: change part of a file by exact replacement, shown as a diff.

A model that rewrites a whole file to change three lines pays for the whole file in
output tokens, and a small one corrupts it. ``edit_file`` takes only what changes:
``{path, edits: [{oldText, newText, replaceAll?}]}``, applied in order to the file as
the user has it (the editor's unsaved buffer when it offers ``fs/read_text_file``),
and written through the editor or atomically to disk (``textfile.py``). An edit that
does not apply writes nothing and quotes the closest lines (``edits.py``). The user is
shown the diff before being asked (``preview``) and in the result.
"""

from __future__ import annotations

from typing import Any

from ..base import ShownContent, ToolContext, ToolOutcome, diff_content
from ..sandbox import PathRefused, Resolved
from . import textfile
from .common import (
    FILE_PATH_PARAM,
    FileChange,
    ToolArgError,
    named,
    refusal,
    sandbox_of,
)
from .edits import apply_edits, parse_edits, unified

_EDIT_ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "oldText": {"type": "string", "description": "Exact text to replace"},
        "newText": {"type": "string", "description": "Replacement text"},
        "replaceAll": {"type": "boolean", "description": "Replace every match"},
    },
    "required": ["oldText", "newText"],
}


class EditFile(FileChange):
    """Replace exact text in a file (or create one); the user sees the diff first."""

    name = "edit_file"
    description = (
        "Edit a file: change text by replacing exact oldText (one match) with newText; "
        'oldText "" creates a file.'
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": FILE_PATH_PARAM,
            "edits": {
                "type": "array",
                "items": _EDIT_ITEM,
                "minItems": 1,
            },
        },
        "required": ["path", "edits"],
    }
    verb = "Edit"

    async def _plan(
        self, arguments: dict[str, Any], ctx: ToolContext
    ) -> tuple[Resolved, textfile.Current, str]:
        resolved = sandbox_of(ctx).resolve(arguments.get("path"))
        edits = parse_edits(arguments)
        current = await textfile.load(ctx, resolved)
        new = apply_edits(current.text, edits)
        textfile.check_size(new)
        return resolved, current, new

    async def preview(self, arguments: dict[str, Any], ctx: ToolContext) -> list[ShownContent]:
        try:
            resolved, current, new = await self._plan(arguments, ctx)
        except (PathRefused, ToolArgError, OSError):
            return []
        return [diff_content(resolved.path, current.text, new)]

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        try:
            resolved, current, new = await self._plan(arguments, ctx)
            where = await textfile.save(ctx, resolved, new, current.mode)
        except (PathRefused, ToolArgError) as exc:
            return refusal(named(exc, arguments.get("path")))
        except OSError as exc:
            return ToolOutcome.text(
                f"cannot edit {arguments.get('path')!r}: {exc.strerror or exc}", is_error=True
            )
        diff, removed, added = unified(resolved.shown, current.text, new)
        verb = "Created" if current.text is None else "Edited"
        outcome = ToolOutcome.text(
            f"{verb} {resolved.shown} (-{removed} +{added} lines):\n{diff}",
            raw={
                "path": resolved.path,
                "created": current.text is None,
                "removedLines": removed,
                "addedLines": added,
                "writtenBy": where,
            },
        )
        outcome.compact_summary = f"{verb.lower()} {resolved.shown}"
        outcome.locations = [{"path": resolved.path}]
        outcome.display = [diff_content(resolved.path, current.text, new)]
        return outcome
