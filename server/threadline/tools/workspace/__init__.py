"""Built-in workspace tools: read, list and search files, edit and write them.

Every path goes through :class:`~threadline.tools.sandbox.Sandbox` first, so a tool only
ever touches files inside the session's ``cwd`` and extra roots; a refusal is an error
result the model reads. Output is bounded (lines, characters, matches, time) because it
lands in a context window, and disk work runs on a worker thread so the event loop never
blocks. One module per tool; :mod:`.common` holds what they share.
"""

from __future__ import annotations

from typing import Any

from ..base import Tool
from .common import offers_fs
from .edit_file import EditFile
from .list_directory import ListDirectory
from .read_file import ReadFile
from .search_text import SearchText
from .write_file import WriteFile

__all__ = [
    "EditFile",
    "ListDirectory",
    "ReadFile",
    "SearchText",
    "WriteFile",
    "workspace_tools",
]


def workspace_tools(client_capabilities: dict[str, Any] | None) -> list[Tool]:
    """The file tools a client gets: the read-only ones, ``write_file`` only when it
    advertised ``fs.writeTextFile``, and ``edit_file`` (through the editor or to disk).
    The tools that change something ask first (the session's mode may say otherwise)."""
    tools: list[Tool] = [ReadFile(), ListDirectory(), SearchText()]
    if offers_fs(client_capabilities, "writeTextFile"):
        tools.append(WriteFile())
    tools.append(EditFile())
    return tools
