"""Path confinement for the workspace tools.

A model names files with strings it made up; this module decides which of them a tool
may touch. A path is accepted only when it names a place inside the session's ``cwd``
or one of its extra roots, both as written (after ``..`` is collapsed) and after every
symlink on the way is resolved. So ``..`` escapes, absolute paths elsewhere, and
symlinks that lead out of the roots are refused; a tool never opens such a path, it
returns the refusal to the model as an error result it can read and act on.

Threat model: the model chooses path strings; it cannot create symlinks or race the
file system (no workspace tool creates links). Checking with ``realpath`` and then
opening the resolved path is therefore enough; tools still open files with
``O_NOFOLLOW`` and check the file type as cheap extra care.
"""

from __future__ import annotations

import os
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
        real = os.path.realpath(lexical)
        if not self.contains_real(real):
            raise PathRefused(
                f"refused: {raw!r} goes through a symlink that leads outside the workspace; "
                "such links are not followed"
            )
        return Resolved(lexical, real, self.shown(lexical))

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

    def link_stays_inside(self, link: str) -> bool:
        """Whether a symlink found while walking a root leads to a place inside the roots."""
        return self.contains_real(os.path.realpath(link))

    def shown(self, path: str) -> str:
        """How results name a path: relative to ``cwd`` when inside it."""
        if _is_within(path, self.cwd):
            rel = os.path.relpath(path, self.cwd)
            return "." if rel == "." else rel
        return path

    def _roots_text(self) -> str:
        return " or ".join(repr(r) for r in self.roots)
