"""``read_file``: a text file, or a line range of it, bounded in lines and characters.

When the editor offers ``fs/read_text_file`` the tool asks it instead of the disk, so
the model sees unsaved buffers. A local read opens the file through the sandbox with no
window between check and use, and never holds one huge line in memory whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from pydantic import ValidationError

from threadline_protocol import methods as pm

from ..base import ToolContext, ToolKind, ToolOutcome
from ..sandbox import PathRefused, Resolved, Sandbox
from .common import (
    FILE_PATH_PARAM,
    ToolArgError,
    client_offers,
    in_thread,
    int_arg,
    is_binary,
    named,
    open_regular,
    refusal,
    sandbox_of,
)

READ_MAX_LINES = 500
READ_MAX_CHARS = 40_000
LINE_MAX_CHARS = 2_000
"""Longer lines are cut (minified files would otherwise fill the context alone)."""

COUNT_MAX_BYTES = 8 << 20
"""How far past the requested range a local read keeps counting lines for "of N"."""
BINARY_SNIFF_BYTES = 8192
BINARY_READ = "this looks like a binary file; read_file only shows text"


def _cut_line(line: str, dropped: int = 0) -> str:
    """Cut a line to :data:`LINE_MAX_CHARS`; ``dropped`` counts bytes never read."""
    if len(line) <= LINE_MAX_CHARS and not dropped:
        return line
    more = len(line) - min(len(line), LINE_MAX_CHARS) + dropped
    return line[:LINE_MAX_CHARS] + f" […{more} more characters]"


def _open_regular(sandbox: Sandbox, resolved: Resolved) -> int:
    try:
        return open_regular(sandbox, resolved, directory="this is a directory; use list_directory")
    except FileNotFoundError:
        raise ToolArgError("no such file") from None


@dataclass(slots=True)
class _Slice:
    lines: list[str]
    first: int
    total: int | None
    more: bool
    source: str

    @property
    def last(self) -> int:
        return self.first + len(self.lines) - 1


def _bound(lines: Iterable[tuple[str, int]], want: int, max_chars: int) -> tuple[list[str], bool]:
    """Take up to ``want`` lines (each cut to :data:`LINE_MAX_CHARS`) within
    ``max_chars``; report whether the character bound is what stopped it. Lines come
    as (text, bytes of it never read)."""
    out: list[str] = []
    used = 0
    for line, dropped in lines:
        if len(out) >= want:
            break
        cut = _cut_line(line, dropped)
        if out and used + len(cut) + 1 > max_chars:
            return out, True
        out.append(cut)
        used += len(cut) + 1
    return out, False


def _physical_lines(f: BinaryIO) -> Iterator[tuple[bytes, int, int]]:
    """Each line as (its first bytes, its full size, bytes of content left unread): a
    file that is one huge line never sits in memory whole, and line numbers stay right."""
    limit = LINE_MAX_CHARS * 4 + 4
    while True:
        head = f.readline(limit)
        if not head:
            return
        size = len(head)
        dropped = 0
        if not head.endswith(b"\n"):
            while True:  # skip the rest of an over-long line
                rest = f.readline(1 << 16)
                size += len(rest)
                dropped += len(rest) - rest.endswith(b"\n")
                if not rest or rest.endswith(b"\n"):
                    break
        yield head, size, dropped


def _decode(head: bytes) -> str:
    return head.decode("utf-8", "replace").rstrip("\n").rstrip("\r")


def _read_local(
    sandbox: Sandbox,
    resolved: Resolved,
    start: int,
    end: int | None,
    max_lines: int,
    max_chars: int,
) -> _Slice:
    fd = _open_regular(sandbox, resolved)
    with os.fdopen(fd, "rb") as f:
        if is_binary(f.read(BINARY_SNIFF_BYTES)):
            raise ToolArgError(BINARY_READ)
        f.seek(0)
        lines_in = _physical_lines(f)
        number = 0
        scanned = 0

        def from_start() -> Iterator[tuple[str, int]]:
            nonlocal number, scanned
            for head, size, dropped in lines_in:
                number += 1
                scanned += size
                if number >= start:
                    if is_binary(head):  # a NUL past the sniffed start
                        raise ToolArgError(BINARY_READ)
                    yield _decode(head), dropped

        span = max_lines if end is None else min(end - start + 1, max_lines)
        lines, char_cut = _bound(from_start(), span, max_chars)
        # ``number`` may include one line read past the slice; count on from there.
        total: int | None = None
        for _head, size, _dropped in lines_in:
            number += 1
            scanned += size
            if scanned > COUNT_MAX_BYTES:
                break
        else:
            total = number
    if total is not None and start > max(total, 1):
        raise ToolArgError(f"startLine {start} is past the end of the file ({total} lines)")
    last = start + len(lines) - 1
    stop_at = total if end is None else (end if total is None else min(end, total))
    more = char_cut or stop_at is None or last < stop_at
    return _Slice(lines, start, total, more, "disk")


def _format_read(shown: str, s: _Slice, end: int | None) -> str:
    if not s.lines:
        if s.total == 0:
            return f"{shown} (empty file)"
        return f"{shown}: no lines from line {s.first} (the file is shorter)"
    of = f" of {s.total}" if s.total is not None else ""
    header = f"{shown} (lines {s.first}-{s.last}{of})"
    body = "\n".join(s.lines)
    if not s.more:
        return f"{header}\n{body}"
    if s.total is not None:
        upto = s.total if end is None else min(end, s.total)
        left = f"{upto - s.last} more lines"
    else:
        left = "more lines follow"
    return f"{header}\n{body}\n[{left}; call read_file with startLine={s.last + 1} to read on]"


class ReadFile:
    """Read a text file, or a line range of it."""

    name = "read_file"
    description = (
        "Read a text file in the workspace. `path` is relative to the workspace root. "
        f"Shows at most {READ_MAX_LINES} lines per call; use startLine/endLine (1-based, "
        "inclusive) to read a range of a large file."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": FILE_PATH_PARAM,
            "startLine": {"type": "integer", "minimum": 1, "description": "First line (1-based)"},
            "endLine": {"type": "integer", "minimum": 1, "description": "Last line (inclusive)"},
        },
        "required": ["path"],
    }
    kind: ToolKind = "read"
    parallelizable = True
    needs_permission = False
    timeout = 30.0

    def __init__(self, max_lines: int = READ_MAX_LINES, max_chars: int = READ_MAX_CHARS) -> None:
        self.max_lines = max_lines
        self.max_chars = max_chars

    def title(self, arguments: dict[str, Any]) -> str:
        path = arguments.get("path")
        start, end = arguments.get("startLine"), arguments.get("endLine")
        where = f" (lines {start or 1}-{end or 'end'})" if start or end else ""
        return f"Read {path}{where}" if isinstance(path, str) else "Read file"

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        try:
            resolved = sandbox_of(ctx).resolve(arguments.get("path"))
            start = int_arg(arguments, "startLine")
        except (PathRefused, ToolArgError):
            return []
        loc: dict[str, Any] = {"path": resolved.path}
        if start is not None:
            loc["line"] = start
        return [loc]

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        try:
            resolved = sandbox_of(ctx).resolve(arguments.get("path"))
            start = int_arg(arguments, "startLine") or 1
            end = int_arg(arguments, "endLine")
            if end is not None and end < start:
                raise ToolArgError(f"endLine {end} is before startLine {start}")
            if client_offers(ctx, "readTextFile"):
                piece = await self._read_editor(resolved, start, end, ctx)
            else:
                sandbox = sandbox_of(ctx)
                piece = await in_thread(
                    lambda: _read_local(
                        sandbox, resolved, start, end, self.max_lines, self.max_chars
                    )
                )
        except (PathRefused, ToolArgError) as exc:
            return refusal(named(exc, arguments.get("path")))
        except OSError as exc:
            return ToolOutcome.text(
                f"cannot read {arguments.get('path')!r}: {exc.strerror}", is_error=True
            )
        text = _format_read(resolved.shown, piece, end)
        raw = {
            "path": resolved.path,
            "startLine": piece.first,
            "endLine": piece.last if piece.lines else None,
            "totalLines": piece.total,
            "truncated": piece.more,
            "source": piece.source,
        }
        outcome = ToolOutcome.text(text, raw=raw)
        outcome.compact_summary = f"read {resolved.shown} lines {piece.first}-{piece.last}"
        outcome.locations = [{"path": resolved.path, "line": piece.first}]
        return outcome

    async def _read_editor(
        self, resolved: Resolved, start: int, end: int | None, ctx: ToolContext
    ) -> _Slice:
        """Ask the editor (``fs/read_text_file``): it answers with unsaved buffer text."""
        want = self.max_lines if end is None else min(end - start + 1, self.max_lines)
        params: dict[str, Any] = {
            "sessionId": ctx.session_id,
            "path": resolved.path,
            "line": start,
            "limit": want + 1,  # one more than shown, to learn whether more follow
        }
        try:
            content = (
                await ctx.link.read_text_file(pm.ReadTextFileParams.model_validate(params))
            ).content
        except ValidationError:
            raise ToolArgError("the editor answered fs/read_text_file without text") from None
        except Exception as exc:
            raise ToolArgError(f"the editor could not read it: {exc}") from exc
        got = content.split("\n")
        if got[-1] == "":
            got.pop()
        if not got and start > 1:
            raise ToolArgError(f"startLine {start} is past the end of the file")
        lines, char_cut = _bound(((line.rstrip("\r"), 0) for line in got), want, self.max_chars)
        span = None if end is None else end - start + 1
        more = char_cut or (len(got) > len(lines) and (span is None or len(lines) < span))
        # Fewer lines than asked for means the file ended there.
        total = len(got) if start == 1 and len(got) <= want else None
        return _Slice(lines, start, total, more, "editor")
