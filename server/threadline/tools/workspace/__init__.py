"""Built-in workspace tools: read, list and search files, and write through the editor.

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
from .list_directory import ListDirectory
from .read_file import ReadFile
from .search_text import SearchText
from .write_file import WriteFile

__all__ = ["ListDirectory", "ReadFile", "SearchText", "WriteFile", "workspace_tools"]


def workspace_tools(client_capabilities: dict[str, Any] | None) -> list[Tool]:
    """The built-in tools a client gets: read-only ones always, ``write_file`` only
    when it advertised ``fs.writeTextFile``."""
    tools: list[Tool] = [ReadFile(), ListDirectory(), SearchText()]
    if offers_fs(client_capabilities, "writeTextFile"):
        tools.append(WriteFile())
    return tools
