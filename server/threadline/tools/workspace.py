"""Built-in workspace tools: read, list and search files, and write through the editor.

Every path goes through :class:`~.sandbox.Sandbox` first, so a tool only ever touches
files inside the session's ``cwd`` and extra roots; a refusal is an error result the
model reads. Output is bounded (lines, characters, matches, time) because it lands in
a context window, and disk work runs on a worker thread so the event loop never
blocks. When the editor offers ``fs/read_text_file``, ``read_file`` asks it instead of
the disk, so the model sees unsaved buffers; ``write_file`` exists only when the
editor offers ``fs/write_text_file`` and always asks the user first.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TypeVar

import anyio
import anyio.to_thread
import regex
from pydantic import ValidationError

from threadline_protocol import methods as pm

from .base import Tool, ToolContext, ToolKind, ToolOutcome
from .sandbox import PathRefused, Resolved, Sandbox

READ_MAX_LINES = 500
READ_MAX_CHARS = 40_000
LINE_MAX_CHARS = 2_000
"""Longer lines are cut (minified files would otherwise fill the context alone)."""

COUNT_MAX_BYTES = 8 << 20
"""How far past the requested range a local read keeps counting lines for "of N"."""

LIST_MAX_ENTRIES = 500

SEARCH_DEFAULT_RESULTS = 50
SEARCH_MAX_RESULTS = 200
SEARCH_SECONDS = 8.0
SEARCH_MAX_FILES = 20_000
SEARCH_MAX_FILE_BYTES = 1 << 20
SEARCH_SHOW_CHARS = 200
PATTERN_MAX_CHARS = 1_000
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)
"""Version-control internals and caches: never what the model is looking for, and
often most of the files under a root."""

WRITE_MAX_BYTES = 1 << 20
BINARY_SNIFF_BYTES = 8192
BINARY_READ = "this looks like a binary file; read_file only shows text"

_T = TypeVar("_T")


def _folder_location(arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
    """The folder a listing or search covers (the workspace root by default)."""
    try:
        return [{"path": _sandbox(ctx).resolve(arguments.get("path"), default=".").path}]
    except PathRefused:
        return []


class ToolArgError(ValueError):
    """Bad arguments from the model; the message is the error result it reads."""


# -- shared helpers ---------------------------------------------------------------------


def _sandbox(ctx: ToolContext) -> Sandbox:
    return Sandbox(ctx.cwd, ctx.roots)


def _int_arg(args: dict[str, Any], name: str, *, minimum: int = 1) -> int | None:
    """An optional integer argument; small models often send numbers as strings."""
    value = args.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ToolArgError(f"{name} must be an integer")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if not isinstance(value, int):
        raise ToolArgError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ToolArgError(f"{name} must be at least {minimum}, got {value}")
    return value


def _bool_arg(args: dict[str, Any], name: str, default: bool = False) -> bool:
    value = args.get(name, default)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _str_arg(args: dict[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolArgError(f"{name} must be a string")
    return value


def _capability(ctx: ToolContext, name: str) -> bool:
    """Whether the client advertised ``fs.<name>`` at ``initialize``."""
    try:
        fs = (ctx.link.client_capabilities() or {}).get("fs") or {}
    except Exception:
        return False
    return isinstance(fs, dict) and bool(fs.get(name))


async def _in_thread(fn: Callable[[], _T], cancel: threading.Event | None = None) -> _T:
    """Run blocking disk work on a worker thread. An interrupt does not wait for it:
    the thread is abandoned and ``cancel`` tells it to stop at its next check."""
    try:
        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
    finally:
        if cancel is not None:
            cancel.set()


def _refusal(exc: Exception) -> ToolOutcome:
    return ToolOutcome.text(str(exc), is_error=True)


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head


def _cut_line(line: str, dropped: int = 0) -> str:
    """Cut a line to :data:`LINE_MAX_CHARS`; ``dropped`` counts bytes never read."""
    if len(line) <= LINE_MAX_CHARS and not dropped:
        return line
    more = len(line) - min(len(line), LINE_MAX_CHARS) + dropped
    return line[:LINE_MAX_CHARS] + f" […{more} more characters]"


def _open_regular(sandbox: Sandbox, resolved: Resolved) -> int:
    """Open a file for reading with no window between check and use, refusing
    anything but a regular file (opened non-blocking first: a FIFO would block)."""
    try:
        fd = sandbox.open(resolved, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ToolArgError("no such file") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ToolArgError("this is a directory; use list_directory")
        if not stat.S_ISREG(st.st_mode):
            raise ToolArgError("not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


# -- read_file --------------------------------------------------------------------------


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
        if _is_binary(f.read(BINARY_SNIFF_BYTES)):
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
                    if _is_binary(head):  # a NUL past the sniffed start
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
            "path": {"type": "string", "description": "File path, relative to the workspace"},
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
            resolved = _sandbox(ctx).resolve(arguments.get("path"))
            start = _int_arg(arguments, "startLine")
        except (PathRefused, ToolArgError):
            return []
        loc: dict[str, Any] = {"path": resolved.path}
        if start is not None:
            loc["line"] = start
        return [loc]

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        try:
            resolved = _sandbox(ctx).resolve(arguments.get("path"))
            start = _int_arg(arguments, "startLine") or 1
            end = _int_arg(arguments, "endLine")
            if end is not None and end < start:
                raise ToolArgError(f"endLine {end} is before startLine {start}")
            if _capability(ctx, "readTextFile"):
                piece = await self._read_editor(resolved, start, end, ctx)
            else:
                sandbox = _sandbox(ctx)
                piece = await _in_thread(
                    lambda: _read_local(
                        sandbox, resolved, start, end, self.max_lines, self.max_chars
                    )
                )
        except (PathRefused, ToolArgError) as exc:
            return _refusal(_named(exc, arguments.get("path")))
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


def _named(exc: Exception, path: object) -> Exception:
    """Prefix an argument error with the path it concerns (refusals already name it)."""
    if isinstance(exc, PathRefused):
        return exc
    return ToolArgError(f"{path!r}: {exc}" if isinstance(path, str) else str(exc))


# -- list_directory ---------------------------------------------------------------------


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


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
                    files.append(f"{name} ({_size(entry.stat(follow_symlinks=False).st_size)})")
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
        return _folder_location(arguments, ctx)

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        sandbox = _sandbox(ctx)
        try:
            resolved = sandbox.resolve(arguments.get("path"), default=".")
        except PathRefused as exc:
            return _refusal(exc)
        try:
            entries, total = await _in_thread(
                lambda: _list_local(sandbox, resolved, self.max_entries)
            )
        except PathRefused as exc:
            return _refusal(exc)
        except ToolArgError as exc:
            return _refusal(ToolArgError(f"{resolved.shown!r}: {exc}"))
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


# -- search_text ------------------------------------------------------------------------


@dataclass(slots=True)
class _Search:
    matches: list[dict[str, Any]] = field(default_factory=list)
    files_searched: int = 0
    files_matched: int = 0
    skipped_binary: int = 0
    skipped_large: int = 0
    skipped_links: int = 0
    hit_limit: bool = False
    """Stopped at the result limit."""
    hit_file_limit: bool = False
    """Stopped at the file-count limit (:data:`SEARCH_MAX_FILES`)."""
    timed_out: bool = False


def _window(line: str, col: int) -> str:
    """The part of a long line around the match."""
    line = line.rstrip("\r")
    if len(line) <= SEARCH_SHOW_CHARS:
        return line.strip()
    begin = max(0, min(col - SEARCH_SHOW_CHARS // 3, len(line) - SEARCH_SHOW_CHARS))
    piece = line[begin : begin + SEARCH_SHOW_CHARS]
    return ("…" if begin else "") + piece + ("…" if begin + SEARCH_SHOW_CHARS < len(line) else "")


_Opener = Callable[[], int]
"""Opens one found file (non-blocking, not following a symlink) and returns its fd."""


def _walk(fd: int, base: str) -> Iterator[tuple[str, _Opener]]:
    """Files under the directory open as ``fd``, in a stable order, each as (its path
    under ``base``, how to open it). ``os.fwalk`` descends through directory fds and
    checks each one it enters is the one it listed, so a directory swapped for a
    symlink is never entered; files open relative to their directory's fd."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    for current, dirs, files, dir_fd in os.fwalk(".", dir_fd=fd, follow_symlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):

            def opener(name: str = name, dir_fd: int = dir_fd) -> int:
                return os.open(name, flags, dir_fd=dir_fd)

            yield os.path.normpath(os.path.join(base, current, name)), opener


class _Searcher:
    def __init__(
        self,
        sandbox: Sandbox,
        base: Resolved,
        pattern: regex.Pattern[str],
        include: str | None,
        max_results: int,
        seconds: float,
        cancel: threading.Event,
    ) -> None:
        self.sandbox = sandbox
        self.base = base
        self.pattern = pattern
        self.include = include
        self.max_results = max_results
        self.deadline = time.monotonic() + seconds
        self.cancel = cancel
        self.report = _Search()

    def _included(self, real: str) -> bool:
        if not self.include:
            return True
        rel = os.path.relpath(real, self.base.real)
        return fnmatch.fnmatch(os.path.basename(real), self.include) or fnmatch.fnmatch(
            rel, self.include
        )

    def run(self) -> _Search:
        report = self.report
        try:
            fd = self.sandbox.open(self.base, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            raise ToolArgError("no such file or directory") from None
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                self._search_tree(fd)
            elif stat.S_ISREG(mode):
                self._search_file(self.base.real, lambda: os.dup(fd))
            else:
                raise ToolArgError("not a regular file or directory")
        finally:
            os.close(fd)
        return report

    def _search_tree(self, fd: int) -> None:
        report = self.report
        for real, opener in _walk(fd, self.base.real):
            if self.cancel.is_set() or time.monotonic() >= self.deadline:
                report.timed_out = not self.cancel.is_set()
                break
            if report.files_searched >= SEARCH_MAX_FILES:
                report.hit_file_limit = True
                break
            if not self._included(real):
                continue
            self._search_file(real, opener)
            if report.hit_limit or report.timed_out:
                break

    def _search_file(self, real: str, opener: _Opener) -> None:
        report = self.report
        try:
            fd = opener()
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                report.skipped_links += 1
            return
        try:
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode):
                    return
                if st.st_size > SEARCH_MAX_FILE_BYTES:
                    report.skipped_large += 1
                    return
                os.set_blocking(f.fileno(), True)
                data = f.read(SEARCH_MAX_FILE_BYTES + 1)
        except OSError:
            return
        if _is_binary(data):  # the whole file, not only its start: no raw control bytes
            report.skipped_binary += 1
            return
        report.files_searched += 1
        text = data.decode("utf-8", "replace")
        shown = self.sandbox.shown(self._as_workspace_path(real))
        line_no, pos, last_line = 1, 0, 0
        matched = False
        try:
            remaining = max(self.deadline - time.monotonic(), 0.001)
            for m in self.pattern.finditer(text, timeout=remaining, concurrent=True):
                line_no += text.count("\n", pos, m.start())
                pos = m.start()
                if line_no == last_line:
                    continue
                last_line = line_no
                begin = text.rfind("\n", 0, m.start()) + 1
                stop = text.find("\n", m.start())
                line = text[begin : stop if stop >= 0 else len(text)]
                report.matches.append(
                    {"path": shown, "line": line_no, "text": _window(line, m.start() - begin)}
                )
                matched = True
                if len(report.matches) >= self.max_results:
                    report.hit_limit = True
                    break
        except TimeoutError:
            report.timed_out = True
        if matched:
            report.files_matched += 1

    def _as_workspace_path(self, real: str) -> str:
        """Name a found file under the path the model used, not its resolved spelling."""
        rel = os.path.relpath(real, self.base.real)
        return os.path.normpath(os.path.join(self.base.path, rel))


class SearchText:
    """Regex search over the text files under a directory, bounded in matches and time."""

    name = "search_text"
    description = (
        "Search the workspace's text files for a regular expression (Python syntax). "
        "Returns matching lines as 'path:line: text'. Narrow with `path` (a directory or "
        "file) and `include` (a glob such as '*.py')."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression to find"},
            "path": {"type": "string", "description": "Directory or file to search (default: all)"},
            "include": {"type": "string", "description": "Only files matching this glob"},
            "ignoreCase": {"type": "boolean", "description": "Case-insensitive match"},
            "maxResults": {
                "type": "integer",
                "minimum": 1,
                "maximum": SEARCH_MAX_RESULTS,
                "description": f"Most matching lines to return (default {SEARCH_DEFAULT_RESULTS})",
            },
        },
        "required": ["pattern"],
    }
    kind: ToolKind = "search"
    parallelizable = True
    needs_permission = False
    timeout = SEARCH_SECONDS + 7.0

    def __init__(self, seconds: float = SEARCH_SECONDS) -> None:
        self.seconds = seconds

    def title(self, arguments: dict[str, Any]) -> str:
        pattern = arguments.get("pattern")
        where = arguments.get("path")
        suffix = f" in {where}" if isinstance(where, str) and where else ""
        return f"Search {pattern!r}{suffix}" if isinstance(pattern, str) else "Search text"

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return _folder_location(arguments, ctx)

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        sandbox = _sandbox(ctx)
        cancel = threading.Event()
        try:
            pattern = self._pattern(arguments)
            include = _str_arg(arguments, "include")
            limit = min(
                _int_arg(arguments, "maxResults") or SEARCH_DEFAULT_RESULTS, SEARCH_MAX_RESULTS
            )
            base = sandbox.resolve(arguments.get("path"), default=".")
            searcher = _Searcher(sandbox, base, pattern, include, limit, self.seconds, cancel)
            report = await _in_thread(searcher.run, cancel)
        except (PathRefused, ToolArgError) as exc:
            return _refusal(exc)
        return ToolOutcome.text(
            _format_search(arguments.get("pattern"), report),
            raw={
                "matches": report.matches,
                "filesSearched": report.files_searched,
                "truncated": report.hit_limit or report.hit_file_limit,
                "timedOut": report.timed_out,
            },
        )

    @staticmethod
    def _pattern(arguments: dict[str, Any]) -> regex.Pattern[str]:
        text = _str_arg(arguments, "pattern")
        if text is None:
            raise ToolArgError("pattern is required")
        if len(text) > PATTERN_MAX_CHARS:
            raise ToolArgError(f"pattern is longer than {PATTERN_MAX_CHARS} characters")
        flags = regex.MULTILINE | (regex.IGNORECASE if _bool_arg(arguments, "ignoreCase") else 0)
        try:
            return regex.compile(text, flags)
        except regex.error as exc:
            raise ToolArgError(f"invalid regular expression {text!r}: {exc}") from None


def _format_search(pattern: object, r: _Search) -> str:
    n = len(r.matches)
    if n == 0:
        head = f"No matches for {pattern!r} ({r.files_searched} files searched)"
    else:
        head = f"{n} matching lines in {r.files_matched} files ({r.files_searched} files searched)"
    notes: list[str] = []
    if r.hit_limit:
        notes.append("stopped at the result limit; narrow the pattern, path or include")
    if r.hit_file_limit:
        notes.append(
            f"stopped after searching {SEARCH_MAX_FILES} files (the file limit); results "
            "are incomplete: narrow the path or include"
        )
    if r.timed_out:
        notes.append("stopped at the time limit; results are incomplete")
    skipped = []
    if r.skipped_binary:
        skipped.append(f"{r.skipped_binary} binary")
    if r.skipped_large:
        skipped.append(f"{r.skipped_large} larger than {_size(SEARCH_MAX_FILE_BYTES)}")
    if r.skipped_links:
        skipped.append(f"{r.skipped_links} symlinked")
    if skipped:
        notes.append("skipped files: " + ", ".join(skipped))
    lines = [head] + [f"{m['path']}:{m['line']}: {m['text']}" for m in r.matches]
    lines += [f"[{note}]" for note in notes]
    return "\n".join(lines)


# -- write_file -------------------------------------------------------------------------


class WriteFile:
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
            "path": {"type": "string", "description": "File path, relative to the workspace"},
            "content": {"type": "string", "description": "The complete new file content"},
        },
        "required": ["path", "content"],
    }
    kind: ToolKind = "edit"
    parallelizable = False
    needs_permission = True
    timeout = 60.0

    def title(self, arguments: dict[str, Any]) -> str:
        path = arguments.get("path")
        return f"Write {path}" if isinstance(path, str) else "Write file"

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        try:
            return [{"path": _sandbox(ctx).resolve(arguments.get("path")).path}]
        except PathRefused:
            return []

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        if not _capability(ctx, "writeTextFile"):
            return ToolOutcome.text("the editor does not accept file writes", is_error=True)
        try:
            resolved = _sandbox(ctx).resolve(arguments.get("path"))
            content = arguments.get("content")
            if not isinstance(content, str):
                raise ToolArgError("content must be a string")
            size = len(content.encode("utf-8", "surrogatepass"))
            if size > WRITE_MAX_BYTES:
                raise ToolArgError(f"content is larger than {_size(WRITE_MAX_BYTES)}")
            parts = resolved.path.split(os.sep)
            if any(p in (".git", ".hg", ".svn") for p in parts):
                raise ToolArgError("writing inside version-control folders is not allowed")
            if await anyio.Path(resolved.real).is_dir():
                raise ToolArgError("this is a directory")
        except (PathRefused, ToolArgError) as exc:
            return _refusal(_named(exc, arguments.get("path")))
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
        return outcome


def workspace_tools(client_capabilities: dict[str, Any] | None) -> list[Tool]:
    """The built-in tools a client gets: read-only ones always, ``write_file`` only
    when it advertised ``fs.writeTextFile``."""
    tools: list[Tool] = [ReadFile(), ListDirectory(), SearchText()]
    fs = (client_capabilities or {}).get("fs") or {}
    if isinstance(fs, dict) and fs.get("writeTextFile"):
        tools.append(WriteFile())
    return tools
