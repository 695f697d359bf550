"""``list_directory``: one directory, sub-directories first, files with their sizes.

The directory is opened through the sandbox and its entries read through that fd;
a symlink is shown with where it points, and never followed out of the workspace.
"""

from __future__ import annotations

import os
from typing import Any

from ..base import ToolContext, ToolKind, ToolOutcome
from ..sandbox import PathRefused, Resolved, Sandbox
from .common import ToolArgError, folder_location, human_size, in_thread, refusal, sandbox_of

LIST_MAX_ENTRIES = 500


def _list_local(sandbox: Sandbox, resolved: Resolved, max_entries: int) -> tuple[list[str], int]:
    try:
        fd = sandbox.open(resolved, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        raise ToolArgError("no such directory") from None
    except NotADirectoryError:
        raise ToolArgError("not a directory; use read_file for files") from None
    try:
        return _list_fd(sandbox, resolved, fd, max_entries)
    finally:
        os.close(fd)


def _list_fd(
    sandbox: Sandbox, resolved: Resolved, fd: int, max_entries: int
) -> tuple[list[str], int]:
    """List the directory open as ``fd`` (entries are read through it, never by name)."""
    dirs: list[str] = []
    files: list[str] = []
    with os.scandir(fd) as it:
        for entry in it:
            name = entry.name
            if entry.is_symlink():
                real = os.path.realpath(os.path.join(resolved.real, name))
                if sandbox.contains_real(real):
                    kind = "/" if os.path.isdir(real) else ""
                    files.append(f"{name}{kind} -> {sandbox.shown(sandbox.as_written(real))}")
                else:
                    files.append(f"{name} -> (outside the workspace; not followed)")
            elif entry.is_dir(follow_symlinks=False):
                dirs.append(name + "/")
            else:
                try:
                    files.append(
                        f"{name} ({human_size(entry.stat(follow_symlinks=False).st_size)})"
                    )
                except OSError:
                    files.append(name)
    entries = sorted(dirs, key=str.lower) + sorted(files, key=str.lower)
    return entries[:max_entries], len(entries)


class ListDirectory:
    """List one directory: sub-directories first, then files with their sizes."""

    name = "list_directory"
    description = (
        "List the files and sub-directories of a directory in the workspace "
        "(default: the workspace root). Directories end with '/'."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Directory, relative to the workspace"}
        },
    }
    kind: ToolKind = "read"
    parallelizable = True
    needs_permission = False
    timeout = 30.0

    def __init__(self, max_entries: int = LIST_MAX_ENTRIES) -> None:
        self.max_entries = max_entries

    def title(self, arguments: dict[str, Any]) -> str:
        path = arguments.get("path")
        return f"List {path}" if isinstance(path, str) and path else "List workspace"

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return folder_location(arguments, ctx)

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        sandbox = sandbox_of(ctx)
        try:
            resolved = sandbox.resolve(arguments.get("path"), default=".")
        except PathRefused as exc:
            return refusal(exc)
        try:
            entries, total = await in_thread(
                lambda: _list_local(sandbox, resolved, self.max_entries)
            )
        except PathRefused as exc:
            return refusal(exc)
        except ToolArgError as exc:
            return refusal(ToolArgError(f"{resolved.shown!r}: {exc}"))
        except OSError as exc:
            return ToolOutcome.text(
                f"cannot list {resolved.shown!r}: {exc.strerror}", is_error=True
            )
        shown = resolved.shown.rstrip("/") + "/"
        if total == 0:
            text = f"{shown} (empty directory)"
        else:
            text = f"{shown} ({total} entries)\n" + "\n".join(entries)
            if total > len(entries):
                text += f"\n[{total - len(entries)} more entries not shown]"
        return ToolOutcome.text(
            text, raw={"path": resolved.path, "entries": entries, "total": total}
        )
