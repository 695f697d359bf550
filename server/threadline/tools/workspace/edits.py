"""Exact-replacement edits, and the feedback a model needs when one does not apply.

An edit is ``{oldText, newText, replaceAll?}``. ``oldText`` must occur exactly once in
the text the edits so far produced (every occurrence with ``replaceAll``); an edit that
finds nothing, finds several places, or changes nothing is refused with the file's
closest lines quoted with their numbers, so a small model can copy the right text and
call again. Pure functions on strings: nothing here touches a file.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from .common import ToolArgError

QUOTE_LINES = 8
"""Most lines quoted around a near match."""
MATCHES_LISTED = 5
DIFF_LINES_SHOWN = 60
"""Most lines of the unified diff a model reads back in the result."""


@dataclass(frozen=True, slots=True)
class Edit:
    old: str
    new: str
    replace_all: bool = False


class EditRefused(ToolArgError):
    """An edit that does not apply; the message quotes where the model should look."""


def parse_edits(arguments: dict[str, Any]) -> list[Edit]:
    """The ``edits`` argument, checked. Small models send one edit as an object or put
    ``oldText``/``newText`` at the top: both are taken as a list of one."""
    raw: Any = arguments.get("edits")
    if raw is None and "oldText" in arguments:
        raw = [arguments]
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise ToolArgError("edits must be a non-empty list of {oldText, newText}")
    out: list[Edit] = []
    for i, item in enumerate(raw, 1):
        if not isinstance(item, dict):
            raise ToolArgError(f"edit {i} must be an object with oldText and newText")
        old, new = item.get("oldText"), item.get("newText")
        if not isinstance(old, str) or not isinstance(new, str):
            raise ToolArgError(f"edit {i}: oldText and newText must both be strings")
        flag = item.get("replaceAll", False)
        replace_all = (
            flag.strip().lower() in ("true", "1", "yes") if isinstance(flag, str) else bool(flag)
        )
        out.append(Edit(old, new, replace_all))
    return out


def apply_edits(text: str | None, edits: list[Edit]) -> str:
    """The text after every edit, in order; ``text`` None is a missing file, which only
    an edit with an empty ``oldText`` creates."""
    for i, edit in enumerate(edits, 1):
        where = f"edit {i}" if len(edits) > 1 else "the edit"
        if text is None:
            if edit.old != "":
                raise EditRefused(
                    'no such file; to create it, give one edit with oldText "" and the '
                    "whole content as newText"
                )
            text = edit.new
            continue
        if edit.old == "":
            raise EditRefused(
                f"{where}: oldText is empty; give the exact text to replace (an empty "
                "oldText only creates a file that does not exist)"
            )
        if edit.old == edit.new:
            raise EditRefused(f"{where}: oldText and newText are the same; it changes nothing")
        text = _apply_one(text, edit, where)
    assert text is not None
    return text


def _apply_one(text: str, edit: Edit, where: str) -> str:
    old, new = edit.old, edit.new
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\r\n" not in old:
        # The model writes '\n'; a CRLF file has '\r\n'. Same text, other line ends.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise EditRefused(f"{where}: oldText was not found. {closest_lines(text, edit.old)}")
    if count > 1 and not edit.replace_all:
        raise EditRefused(
            f"{where}: oldText occurs {count} times ({_match_lines(text, old)}); add "
            "surrounding lines to oldText so it matches once, or set replaceAll: true"
        )
    return text.replace(old, new)


def _match_lines(text: str, needle: str) -> str:
    lines: list[str] = []
    start = 0
    while len(lines) < MATCHES_LISTED:
        at = text.find(needle, start)
        if at < 0:
            break
        lines.append(str(text.count("\n", 0, at) + 1))
        start = at + max(len(needle), 1)
    return "at lines " + ", ".join(lines) + (", …" if text.count(needle) > len(lines) else "")


def closest_lines(text: str, wanted: str) -> str:
    """The file's lines most like ``wanted``, numbered, for the model to copy from."""
    lines = text.splitlines()
    if not lines:
        return "The file is empty."
    want = [w for w in wanted.splitlines() if w.strip()]
    if not want:
        return "oldText holds only whitespace."
    anchor = max(want, key=lambda w: len(w.strip()))
    offset = wanted.splitlines().index(anchor)
    stripped = [line.strip() for line in lines]
    match = difflib.get_close_matches(anchor.strip(), stripped, n=1, cutoff=0.5)
    if not match:
        return "No line of the file resembles it; read the file again before editing."
    at = stripped.index(match[0])
    first = max(0, at - offset - 1)
    last = min(len(lines), first + max(len(want), 1) + 2, first + QUOTE_LINES)
    width = len(str(last))
    quoted = "\n".join(f"{n + 1:>{width}}| {lines[n]}" for n in range(first, last))
    return f"The closest lines in the file are:\n{quoted}"


def unified(path: str, old: str | None, new: str) -> tuple[str, int, int]:
    """A unified diff of one file cut to :data:`DIFF_LINES_SHOWN` lines, with the
    number of lines it removes and adds."""
    diff = list(
        difflib.unified_diff(
            (old or "").splitlines(),
            new.splitlines(),
            fromfile="/dev/null" if old is None else f"a/{path}",
            tofile=f"b/{path}",
            lineterm="",
        )
    )
    body = diff[2:]
    removed = sum(1 for d in body if d.startswith("-"))
    added = sum(1 for d in body if d.startswith("+"))
    if len(diff) > DIFF_LINES_SHOWN:
        more = len(diff) - DIFF_LINES_SHOWN
        diff = [*diff[:DIFF_LINES_SHOWN], f"… {more} more diff lines"]
    return "\n".join(diff), removed, added
