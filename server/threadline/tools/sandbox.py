"""Path confinement for the workspace tools.

A model names files with strings it made up; this module decides which of them a tool
may touch. A path is accepted only when it names a place inside the session's ``cwd``
or one of its extra roots, both as written (after ``..`` is collapsed) and after every
symlink on the way is resolved. So ``..`` escapes, absolute paths elsewhere, and
symlinks that lead out of the roots are refused; a tool never opens such a path, it
returns the refusal to the model as an error result it can read and act on.

Checking is not enough on its own: something else (a build, a sync tool, another
process the model started through a shell tool) may swap a directory for a symlink to
outside between the check and the open. So a tool never opens the checked path by
name: :meth:`Sandbox.open` opens the resolved (symlink-free) path from the real root
that holds it without following any symlink on the way (``openat2`` with
``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`` where the kernel has it, else a walk of
``openat(dir_fd, component, O_NOFOLLOW)`` calls). A link swapped in after the check
makes the open fail; there is no window between check and use. Hard links to outside
files are out of scope: no path check can tell them from the files they name.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

MAX_PATH_CHARS = 4096
"""Longest path string accepted (Linux ``PATH_MAX``)."""

MAX_COMPONENT_BYTES = 255
"""Longest single path component, in UTF-8 bytes (Linux ``NAME_MAX``)."""

_REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible formatting character (bidi override, zero-width, BOM…)",
    "Cs": "a lone surrogate",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}


_SLASH_LOOKALIKES = frozenset("\u2044\u2215\u29f8\u29f9\u2571\u2572\ufe68\uff0f\uff3c")
"""Characters that look like '/' or '\\' to a person reading a permission prompt."""


class PathRefused(ValueError):
    """A path the tools will not touch; ``str(exc)`` is written for the model to read."""


# -- opening beneath a root -------------------------------------------------------------

_SYS_OPENAT2 = 437
"""The same number on every Linux architecture (added in 5.6)."""
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [  # the layout of struct open_how
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


class _Openat2:
    """``openat2(2)`` through libc's ``syscall``; off for good once the kernel (or a
    seccomp filter) says it is not there."""

    def __init__(self) -> None:
        self.available = os.uname().sysname == "Linux"
        self._syscall = None
        if self.available:
            try:
                self._syscall = ctypes.CDLL(None, use_errno=True).syscall
            except (OSError, AttributeError):
                self.available = False

    def open(self, dir_fd: int, rel: str, flags: int) -> int | None:
        """An fd, or None when openat2 is unavailable (use the walk instead)."""
        if not self.available or self._syscall is None:
            return None
        how = _OpenHow(
            flags | os.O_CLOEXEC,
            0,
            _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS,
        )
        fd = self._syscall(
            _SYS_OPENAT2, dir_fd, os.fsencode(rel), ctypes.byref(how), ctypes.sizeof(how)
        )
        if fd >= 0:
            return int(fd)
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EPERM, errno.E2BIG):
            self.available = False
            return None
        raise OSError(err, os.strerror(err), rel)


OPENAT2 = _Openat2()


def _open_nofollow(name: str, dir_fd: int, flags: int) -> int:
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except NotADirectoryError:
        # O_DIRECTORY | O_NOFOLLOW on a symlink says ENOTDIR; say what it was.
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
        raise


def open_beneath(root: str, rel: str, flags: int) -> int:
    """Open ``rel`` (normalised, no ``..``) under the directory ``root`` without
    following any symlink, ``root`` itself included. ``ELOOP`` or ``EXDEV`` means a
    link stood on the way."""
    parts = [p for p in rel.split(os.sep) if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"not a normalised relative path: {rel!r}")
    root_fd = os.open(root, _DIR_FLAGS)
    try:
        fd = OPENAT2.open(root_fd, os.path.join(".", *parts), flags)
        if fd is not None:
            return fd
        current = root_fd
        try:
            for part in parts[:-1]:
                nxt = _open_nofollow(part, current, _DIR_FLAGS)
                if current != root_fd:
                    os.close(current)
                current = nxt
            return _open_nofollow(parts[-1] if parts else ".", current, flags)
        finally:
            if current != root_fd:
                os.close(current)
    finally:
        os.close(root_fd)


@dataclass(frozen=True, slots=True)
class Resolved:
    """An accepted path.

    ``path`` is the absolute path as the workspace names it (what the editor knows,
    so it is what ``fs/*`` requests carry); ``real`` is where it leads on disk once
    symlinks are resolved (what local reads open); ``shown`` is how results refer to
    it: relative to ``cwd`` when inside it.
    """

    path: str
    real: str
    shown: str


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _check_characters(raw: str) -> None:
    if "\x00" in raw:
        raise PathRefused("refused: the path contains a NUL byte")
    if len(raw) > MAX_PATH_CHARS:
        raise PathRefused(f"refused: the path is longer than {MAX_PATH_CHARS} characters")
    if "\\" in raw:
        raise PathRefused("refused: use '/' to separate path components, not '\\'")
    for ch in raw:
        if ch in _SLASH_LOOKALIKES:
            raise PathRefused(f"refused: the path contains a look-alike of '/' (U+{ord(ch):04X})")
        category = unicodedata.category(ch)
        what = _REFUSED_CATEGORIES.get(category)
        if what is not None:
            raise PathRefused(f"refused: the path contains {what} (U+{ord(ch):04X})")
    for part in raw.split("/"):
        if len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
            raise PathRefused(
                f"refused: a path component is longer than {MAX_COMPONENT_BYTES} bytes"
            )
        # Look-alikes that turn into separators or dot segments once normalised
        # (FULLWIDTH FULL STOP and SOLIDUS, TWO DOT LEADER, FRACTION SLASH…) could mean
        # something else to an editor or a later tool than they mean here.
        folded = unicodedata.normalize("NFKC", part)
        if folded != part and ("/" in folded or "\\" in folded or folded in (".", "..")):
            raise PathRefused(
                "refused: the path uses look-alike characters that read as '/' or '..'"
            )


def _strip_file_uri(raw: str) -> str:
    """Accept ``file://`` URIs (what resource links carry) as plain absolute paths."""
    if not raw.startswith("file:"):
        return raw
    parts = urlsplit(raw)
    if parts.netloc not in ("", "localhost"):
        raise PathRefused("refused: only local file:// URIs name workspace files")
    return unquote(parts.path)


class Sandbox:
    """The roots one session's tools are confined to: its ``cwd`` plus extra roots."""

    def __init__(self, cwd: str, roots: Iterable[str] = ()) -> None:
        if not os.path.isabs(cwd):
            raise ValueError(f"cwd must be absolute: {cwd!r}")
        self.cwd = os.path.normpath(cwd)
        lexical = [self.cwd] + [os.path.normpath(r) for r in roots if os.path.isabs(r)]
        self.roots: tuple[str, ...] = tuple(dict.fromkeys(lexical))
        self.real_roots: tuple[str, ...] = tuple(
            dict.fromkeys(os.path.realpath(r) for r in self.roots)
        )

    @property
    def all_roots(self) -> Sequence[str]:
        """Roots as written and as resolved: an absolute path may use either spelling."""
        return (*self.roots, *self.real_roots)

    def resolve(self, raw: object, *, default: str | None = None) -> Resolved:
        """Accept or refuse a model-given path. Raises :class:`PathRefused`."""
        if raw is None or raw == "":
            if default is None:
                raise PathRefused("refused: a path is required")
            raw = default
        if not isinstance(raw, str):
            raise PathRefused(f"refused: the path must be a string, not {type(raw).__name__}")
        text = _strip_file_uri(raw)
        _check_characters(text)
        absolute = os.path.isabs(text)
        lexical = os.path.normpath(os.path.join(self.cwd, text))
        if not any(_is_within(lexical, r) for r in self.all_roots):
            if absolute:
                raise PathRefused(
                    f"refused: {raw!r} is outside the workspace; use a path inside "
                    f"{self._roots_text()}"
                )
            raise PathRefused(
                f"refused: {raw!r} leads outside the workspace ('..' may not climb above "
                f"{self._roots_text()})"
            )
        lexical = self.as_written(lexical)
        try:
            real = os.path.realpath(lexical)
        except OSError:  # a link replaced between realpath's lstat and readlink
            raise PathRefused(
                f"refused: {raw!r} changed while it was being checked; try again"
            ) from None
        if not self.contains_real(real):
            raise PathRefused(
                f"refused: {raw!r} goes through a symlink that leads outside the workspace; "
                "such links are not followed"
            )
        return Resolved(lexical, real, self.shown(lexical))

    def open(self, resolved: Resolved, flags: int = os.O_RDONLY) -> int:
        """Open an accepted path with no window between check and use: from the real
        root that holds it, following no symlink (its ``real`` has none). Raises
        :class:`PathRefused` if a link appeared since the check, ``OSError`` else."""
        root = self.real_root_of(resolved)
        try:
            return open_beneath(root, os.path.relpath(resolved.real, root), flags)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EXDEV):
                raise PathRefused(
                    f"refused: {resolved.shown!r} changed while it was being opened (a "
                    "symlink appeared on the way); such links are not followed"
                ) from None
            raise

    def real_root_of(self, resolved: Resolved) -> str:
        """The innermost real root that holds an accepted path."""
        roots = [r for r in self.real_roots if _is_within(resolved.real, r)]
        if not roots:
            raise PathRefused(f"refused: {resolved.shown!r} is outside the workspace")
        return max(roots, key=len)

    def as_written(self, path: str) -> str:
        """Spell a path given through a resolved root the way the workspace names it
        (``/private/tmp/w/a`` → ``/tmp/w/a``), so editor requests match its buffers."""
        if any(_is_within(path, r) for r in self.roots):
            return path
        for root in self.roots:
            real_root = os.path.realpath(root)
            if _is_within(path, real_root):
                return os.path.normpath(root + path[len(real_root) :])
        return path

    def contains_real(self, real: str) -> bool:
        """Whether an already resolved (symlink-free) path lies inside a root."""
        return any(_is_within(real, r) for r in self.real_roots)

    def shown(self, path: str) -> str:
        """How results name a path: relative to ``cwd`` when inside it."""
        if _is_within(path, self.cwd):
            rel = os.path.relpath(path, self.cwd)
            return "." if rel == "." else rel
        return path

    def _roots_text(self) -> str:
        return " or ".join(repr(r) for r in self.roots)
