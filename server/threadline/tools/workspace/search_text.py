"""``search_text``: a regular expression over the text files under a directory.

Bounded in matches, files, file size and time, because the result lands in a context
window and a pattern can be slow; the walk descends through directory fds so a
directory swapped for a symlink is never entered, and an interrupt abandons the
worker thread and tells it to stop.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import regex

from ..base import ToolContext, ToolKind, ToolOutcome
from ..sandbox import PathRefused, Resolved, Sandbox
from .common import (
    ToolArgError,
    bool_arg,
    folder_location,
    human_size,
    in_thread,
    int_arg,
    is_binary,
    refusal,
    sandbox_of,
    str_arg,
)

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
        if is_binary(data):  # the whole file, not only its start: no raw control bytes
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
        return folder_location(arguments, ctx)

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        sandbox = sandbox_of(ctx)
        cancel = threading.Event()
        try:
            pattern = self._pattern(arguments)
            include = str_arg(arguments, "include")
            limit = min(
                int_arg(arguments, "maxResults") or SEARCH_DEFAULT_RESULTS, SEARCH_MAX_RESULTS
            )
            base = sandbox.resolve(arguments.get("path"), default=".")
            searcher = _Searcher(sandbox, base, pattern, include, limit, self.seconds, cancel)
            report = await in_thread(searcher.run, cancel)
        except (PathRefused, ToolArgError) as exc:
            return refusal(exc)
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
        text = str_arg(arguments, "pattern")
        if text is None:
            raise ToolArgError("pattern is required")
        if len(text) > PATTERN_MAX_CHARS:
            raise ToolArgError(f"pattern is longer than {PATTERN_MAX_CHARS} characters")
        flags = regex.MULTILINE | (regex.IGNORECASE if bool_arg(arguments, "ignoreCase") else 0)
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
        skipped.append(f"{r.skipped_large} larger than {human_size(SEARCH_MAX_FILE_BYTES)}")
    if r.skipped_links:
        skipped.append(f"{r.skipped_links} symlinked")
    if skipped:
        notes.append("skipped files: " + ", ".join(skipped))
    lines = [head] + [f"{m['path']}:{m['line']}: {m['text']}" for m in r.matches]
    lines += [f"[{note}]" for note in notes]
    return "\n".join(lines)
