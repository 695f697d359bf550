"""Whole-file text access for the tools that change files (``edit_file``, ``write_file``).

Reading goes to the editor when it offers ``fs/read_text_file`` (its unsaved buffer is
the file the user sees), else to the disk under the sandbox. Writing goes to the editor
when it offers ``fs/write_text_file`` (its buffers and undo stay right), else to the
disk atomically: a temporary file beside the target, written, synced, given the old
file's mode, then renamed over it, all through a directory descriptor opened beneath
the workspace root, so a symlink swapped in after the check cannot redirect it.

Refused either way: binary files, version-control folders, files over
:data:`FILE_MAX_BYTES`, directories and anything that is not a regular file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass

from pydantic import ValidationError

from threadline_protocol import methods as pm

from ..base import ToolContext
from ..sandbox import PathRefused, Resolved, Sandbox
from .common import (
    ToolArgError,
    client_offers,
    human_size,
    in_thread,
    is_binary,
    open_regular,
    sandbox_of,
)

FILE_MAX_BYTES = 1 << 20
"""Largest file the editing tools read or write (1 MiB): bigger ones are not source a
model should rewrite, and the whole text travels in the diff shown to the user."""

VCS_FOLDERS = frozenset({".git", ".hg", ".svn"})
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY


@dataclass(frozen=True, slots=True)
class Current:
    """A file as the editing tools found it: ``text`` is None when it does not exist."""

    text: str | None
    mode: int | None
    source: str
    """``editor`` or ``disk``."""


def refuse_vcs(resolved: Resolved) -> None:
    """Writing inside ``.git`` and friends corrupts a repository; never allowed."""
    parts = set(resolved.path.split(os.sep)) | set(resolved.real.split(os.sep))
    if parts & VCS_FOLDERS:
        raise ToolArgError("writing inside version-control folders is not allowed")


def check_size(text: str) -> int:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > FILE_MAX_BYTES:
        raise ToolArgError(f"the new content is larger than {human_size(FILE_MAX_BYTES)}")
    return size


def _stat_disk(sandbox: Sandbox, resolved: Resolved) -> os.stat_result | None:
    """The file's status (None when missing), refusing what the tools cannot edit."""
    try:
        fd = open_regular(sandbox, resolved)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_size > FILE_MAX_BYTES:
            raise ToolArgError(
                f"the file is {human_size(st.st_size)}, over the "
                f"{human_size(FILE_MAX_BYTES)} the editing tools handle"
            )
        if is_binary(os.pread(fd, 8192, 0)):
            raise ToolArgError("this looks like a binary file; only text files are edited")
        return st
    finally:
        os.close(fd)


def _read_disk(sandbox: Sandbox, resolved: Resolved) -> str:
    fd = open_regular(sandbox, resolved)
    with os.fdopen(fd, "rb") as f:
        data = f.read(FILE_MAX_BYTES + 1)
    if len(data) > FILE_MAX_BYTES:
        raise ToolArgError(f"the file grew past {human_size(FILE_MAX_BYTES)}")
    if is_binary(data):
        raise ToolArgError("this looks like a binary file; only text files are edited")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolArgError("the file is not UTF-8 text; only text files are edited") from None


async def load(ctx: ToolContext, resolved: Resolved) -> Current:
    """The file's current text: the editor's buffer when it offers reads, else the disk.
    A file missing on disk is missing (an editor cannot read it either)."""
    refuse_vcs(resolved)
    sandbox = sandbox_of(ctx)
    st = await in_thread(lambda: _stat_disk(sandbox, resolved))
    if st is None:
        return Current(None, None, "disk")
    mode = stat.S_IMODE(st.st_mode)
    if client_offers(ctx, "readTextFile"):
        params = {"sessionId": ctx.session_id, "path": resolved.path}
        try:
            answer = await ctx.link.read_text_file(pm.ReadTextFileParams.model_validate(params))
        except ValidationError:
            raise ToolArgError("the editor answered fs/read_text_file without text") from None
        except Exception as exc:
            raise ToolArgError(f"the editor could not read it: {exc}") from exc
        if is_binary(answer.content[:8192].encode("utf-8", "surrogatepass")):
            raise ToolArgError("this looks like a binary file; only text files are edited")
        return Current(answer.content, mode, "editor")
    return Current(await in_thread(lambda: _read_disk(sandbox, resolved)), mode, "disk")


async def save(ctx: ToolContext, resolved: Resolved, text: str, mode: int | None) -> str:
    """Write ``text`` as the file's whole content; returns where it went (``editor`` or
    ``disk``). ``mode``: the old file's permission bits (None for a new file)."""
    refuse_vcs(resolved)
    check_size(text)
    if client_offers(ctx, "writeTextFile"):
        params = {"sessionId": ctx.session_id, "path": resolved.path, "content": text}
        try:
            await ctx.link.write_text_file(pm.WriteTextFileParams.model_validate(params))
        except Exception as exc:
            raise ToolArgError(f"the editor could not write it: {exc}") from exc
        return "editor"
    sandbox = sandbox_of(ctx)
    await in_thread(lambda: write_atomic(sandbox, resolved, text, mode))
    return "disk"


def _open_parent(sandbox: Sandbox, resolved: Resolved) -> int:
    """A descriptor of the file's folder, opened beneath its root without following
    links; missing folders on the way are created (inside the root only)."""
    root = sandbox.real_root_of(resolved)
    parts = os.path.relpath(os.path.dirname(resolved.real), root).split(os.sep)
    parts = [p for p in parts if p not in ("", ".")]
    fd = os.open(root, _DIR_FLAGS | os.O_CLOEXEC)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                os.mkdir(part, 0o777, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise PathRefused(
                        f"refused: {resolved.shown!r} changed while it was being written "
                        "(a symlink appeared on the way); such links are not followed"
                    ) from None
                raise
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def write_atomic(sandbox: Sandbox, resolved: Resolved, text: str, mode: int | None) -> None:
    """Temporary file beside the target, synced, renamed over it: a reader sees the old
    file or the new one, never half of either. The old mode is kept (0644-ish under the
    umask for a new file)."""
    dir_fd = _open_parent(sandbox, resolved)
    name = os.path.basename(resolved.real)
    tmp = f".{name}.threadline-{os.getpid()}-{os.urandom(4).hex()}.tmp"
    try:
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o666,
            dir_fd=dir_fd,
        )
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            data = text.encode("utf-8", "surrogatepass")
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    finally:
        os.close(dir_fd)


__all__ = [
    "FILE_MAX_BYTES",
    "Current",
    "check_size",
    "load",
    "refuse_vcs",
    "save",
    "write_atomic",
]
