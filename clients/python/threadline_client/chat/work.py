"""How the agent's work looks in the terminal: an edit as a coloured unified diff, a
command's output, the plan as a checklist, the files a turn changed (``/diff``)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from typing import Any

from rich.text import Text

DIFF_LINES = 60
"""An edit's diff is cut after this many lines: a whole new file would push the
question off the screen."""

OUTPUT_LINES = 12
"""A command's output shows its last lines (the whole of it is in the session)."""

PLAN_MARK = {"completed": "✓", "in_progress": "▸", "pending": "○"}


def diff_items(content: Any) -> list[dict[str, Any]]:
    """The ACP ``diff`` items of a tool call's content."""
    return [c for c in content or [] if isinstance(c, dict) and c.get("type") == "diff"]


def colour_diff(lines: Iterable[str], limit: int = DIFF_LINES) -> Text:
    """Unified diff lines coloured as git does: added green, removed red, hunks cyan."""
    out = Text()
    shown = 0
    rest = 0
    for line in lines:
        line = line.rstrip("\n")
        if shown >= limit:
            rest += 1
            continue
        shown += 1
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = "dim"
        out.append(f"    {line}\n", style=style)
    if rest:
        out.append(f"    … {rest} more diff line{'s' if rest != 1 else ''}\n", style="dim")
    return out


def edit_diff(item: dict[str, Any], cwd: str) -> Text:
    """One ``{type: "diff", path, oldText?, newText}`` item as a unified diff (a missing
    ``oldText`` is a new file)."""
    path = str(item.get("path") or "")
    shown = os.path.relpath(path, cwd) if os.path.isabs(path) and cwd else path
    old = item.get("oldText")
    new = str(item.get("newText") or "")
    before = [] if old is None else str(old).splitlines(keepends=True)
    lines = difflib.unified_diff(
        before,
        new.splitlines(keepends=True),
        "/dev/null" if old is None else f"a/{shown}",
        f"b/{shown}",
        n=2,
    )
    return colour_diff(lines)


def output_tail(text: str, limit: int = OUTPUT_LINES) -> Text:
    """A command's last lines of output, dimmed and indented."""
    lines = text.rstrip("\n").split("\n") if text.strip() else []
    out = Text()
    if len(lines) > limit:
        out.append(f"    … {len(lines) - limit} earlier lines\n", style="dim")
    for line in lines[-limit:]:
        out.append(f"    │ {line}\n", style="dim")
    return out


def plan_text(entries: Any) -> Text:
    """ACP's ``plan`` entries as a checklist: ✓ done, ▸ under way, ○ to do."""
    out = Text("  plan\n", style="bold")
    for e in entries or []:
        if not isinstance(e, dict):
            continue
        status = str(e.get("status") or "pending")
        style = {"completed": "green", "in_progress": "bold yellow"}.get(status, "")
        if e.get("priority") == "high" and status != "completed":
            style += " bold"
        out.append(f"    {PLAN_MARK.get(status, '○')} {e.get('content', '')}\n", style=style)
    return out


def files_text(result: dict[str, Any]) -> Text:
    """``session/diff``'s answer: each file's status and counts, then its diff."""
    out = Text()
    files = result.get("files") or []
    if result.get("notice"):
        out.append(f"  {result['notice']}\n", style="yellow")
    if not files:
        out.append("  no files changed\n", style="dim")
    for f in files:
        name = str(f.get("path"))
        if f.get("status") == "renamed":
            name = f"{f.get('oldPath')} → {name}"
        out.append(f"  {f.get('status', ''):<9}", style="bold")
        out.append(f" {name}  ")
        out.append(f"+{f.get('additions', 0)}", style="green")
        out.append(f" -{f.get('deletions', 0)}\n", style="red")
        if f.get("binary"):
            out.append("    (binary)\n", style="dim")
        elif f.get("truncated"):
            out.append("    (diff left out: too much changed)\n", style="dim")
        elif f.get("diff"):
            out.append_text(colour_diff(str(f["diff"]).splitlines()))
    return out
