"""``write_file``: create or overwrite a file through the editor (``fs/write_text_file``).

The editor does the write, so its buffers and undo stay right; the tool exists only
when the client advertised ``fs.writeTextFile``, always asks the user first, and is a
barrier (never runs beside other calls).
"""

from __future__ import annotations

from typing import Any

import anyio

from threadline_protocol import methods as pm

from ..base import ShownContent, ToolContext, ToolOutcome, diff_content
from ..sandbox import PathRefused, Resolved
from . import textfile
from .common import (
    FILE_PATH_PARAM,
    FileChange,
    ToolArgError,
    client_offers,
    human_size,
    named,
    refusal,
    sandbox_of,
)

WRITE_MAX_BYTES = textfile.FILE_MAX_BYTES


class WriteFile(FileChange):
    """Create or overwrite a file through the editor (``fs/write_text_file``).

    Exists only when the client advertised ``fs.writeTextFile``; always asks
    permission, and is a barrier (never runs beside other calls)."""

    name = "write_file"
    description = (
        "Create or overwrite a text file in the workspace with the given full content. "
        "The user is asked to approve every write."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": FILE_PATH_PARAM,
            "content": {"type": "string", "description": "The complete new file content"},
        },
        "required": ["path", "content"],
    }
    verb = "Write"

    async def _old_text(self, resolved: Resolved, ctx: ToolContext) -> str | None:
        """The file as it is before the write (None: new, or not text we can show)."""
        try:
            return (await textfile.load(ctx, resolved)).text
        except (PathRefused, ToolArgError, OSError):
            return None

    async def preview(self, arguments: dict[str, Any], ctx: ToolContext) -> list[ShownContent]:
        content = arguments.get("content")
        try:
            resolved = sandbox_of(ctx).resolve(arguments.get("path"))
        except PathRefused:
            return []
        if not isinstance(content, str):
            return []
        return [diff_content(resolved.path, await self._old_text(resolved, ctx), content)]

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        if not client_offers(ctx, "writeTextFile"):
            return ToolOutcome.text("the editor does not accept file writes", is_error=True)
        try:
            resolved = sandbox_of(ctx).resolve(arguments.get("path"))
            content = arguments.get("content")
            if not isinstance(content, str):
                raise ToolArgError("content must be a string")
            size = len(content.encode("utf-8", "surrogatepass"))
            if size > WRITE_MAX_BYTES:
                raise ToolArgError(f"content is larger than {human_size(WRITE_MAX_BYTES)}")
            textfile.refuse_vcs(resolved)
            if await anyio.Path(resolved.real).is_dir():
                raise ToolArgError("this is a directory")
        except (PathRefused, ToolArgError) as exc:
            return refusal(named(exc, arguments.get("path")))
        old = await self._old_text(resolved, ctx)
        params = {"sessionId": ctx.session_id, "path": resolved.path, "content": content}
        try:
            await ctx.link.write_text_file(pm.WriteTextFileParams.model_validate(params))
        except Exception as exc:
            return ToolOutcome.text(
                f"the editor could not write {resolved.shown}: {exc}", is_error=True
            )
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        outcome = ToolOutcome.text(
            f"Wrote {resolved.shown} ({lines} lines, {size} bytes)",
            raw={"path": resolved.path, "bytes": size, "lines": lines},
        )
        outcome.compact_summary = f"wrote {resolved.shown}"
        outcome.locations = [{"path": resolved.path}]
        outcome.display = [diff_content(resolved.path, old, content)]
        return outcome
