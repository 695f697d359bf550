"""What the workspace tools share: argument parsing, the sandbox, worker threads,
and the error results a model reads when a call is refused."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from ..base import ToolContext, ToolKind, ToolOutcome
from ..sandbox import PathRefused, Resolved, Sandbox

FILE_PATH_PARAM: dict[str, Any] = {
    "type": "string",
    "description": "File path, relative to the workspace",
}
"""The ``path`` parameter of the tools that take one file."""

_T = TypeVar("_T")


def folder_location(arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
    """The folder a listing or search covers (the workspace root by default)."""
    try:
        return [{"path": sandbox_of(ctx).resolve(arguments.get("path"), default=".").path}]
    except PathRefused:
        return []


class ToolArgError(ValueError):
    """Bad arguments from the model; the message is the error result it reads."""


def path_title(verb: str, arguments: dict[str, Any]) -> str:
    """``Edit src/a.py`` for a call on one file (``Edit file`` without a path)."""
    path = arguments.get("path")
    return f"{verb} {path}" if isinstance(path, str) else f"{verb} file"


def path_location(arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
    """The one file a call names, as clients are shown it (none when refused)."""
    try:
        return [{"path": sandbox_of(ctx).resolve(arguments.get("path")).path}]
    except PathRefused:
        return []


class FileChange:
    """What the tools that change one file (``write_file``, ``edit_file``) share: one
    at a time, behind a permission prompt, shown by the path they touch."""

    verb = "Change"
    kind: ToolKind = "edit"
    parallelizable = False
    needs_permission = True
    timeout = 60.0

    def title(self, arguments: dict[str, Any]) -> str:
        return path_title(self.verb, arguments)

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return path_location(arguments, ctx)


def open_regular(
    sandbox: Sandbox, resolved: Resolved, *, directory: str = "this is a directory"
) -> int:
    """Open a file for reading with no window between check and use, refusing
    anything but a regular file (opened non-blocking first: a FIFO would block).
    ``FileNotFoundError`` passes through; ``directory`` is said of a folder."""
    fd = sandbox.open(resolved, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ToolArgError(directory)
        if not stat.S_ISREG(st.st_mode):
            raise ToolArgError("not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def sandbox_of(ctx: ToolContext) -> Sandbox:
    return Sandbox(ctx.cwd, ctx.roots)


def int_arg(args: dict[str, Any], name: str, *, minimum: int = 1) -> int | None:
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


def bool_arg(args: dict[str, Any], name: str, default: bool = False) -> bool:
    value = args.get(name, default)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def str_arg(args: dict[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolArgError(f"{name} must be a string")
    return value


def offers_fs(client_capabilities: dict[str, Any] | None, name: str) -> bool:
    """Whether the capabilities a client advertised at ``initialize`` hold ``fs.<name>``."""
    fs = (client_capabilities or {}).get("fs") or {}
    return isinstance(fs, dict) and bool(fs.get(name))


def client_offers(ctx: ToolContext, name: str) -> bool:
    """Whether this session's client advertised ``fs.<name>`` (a link that cannot say
    offers nothing)."""
    try:
        return offers_fs(ctx.link.client_capabilities(), name)
    except Exception:
        return False


async def in_thread(fn: Callable[[], _T], cancel: threading.Event | None = None) -> _T:
    """Run blocking disk work on a worker thread. An interrupt does not wait for it:
    the thread is abandoned and ``cancel`` tells it to stop at its next check."""
    try:
        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
    finally:
        if cancel is not None:
            cancel.set()


def refusal(exc: Exception) -> ToolOutcome:
    return ToolOutcome.text(str(exc), is_error=True)


def is_binary(head: bytes) -> bool:
    return b"\x00" in head


def named(exc: Exception, path: object) -> Exception:
    """Prefix an argument error with the path it concerns (refusals already name it)."""
    if isinstance(exc, PathRefused):
        return exc
    return ToolArgError(f"{path!r}: {exc}" if isinstance(path, str) else str(exc))


def human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"
