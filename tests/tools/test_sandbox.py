"""Path confinement: what the sandbox accepts, what it refuses, and how it names paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.tools.fakes import build_workspace, escape_corpus
from threadline.tools.sandbox import PathRefused, Sandbox


@pytest.fixture
def ws(tmp_path: Path) -> tuple[Path, Path]:
    return build_workspace(tmp_path)


def test_every_escape_is_refused(ws: tuple[Path, Path]) -> None:
    root, outside = ws
    box = Sandbox(str(root))
    for raw in escape_corpus(root, outside):
        with pytest.raises(PathRefused) as info:
            box.resolve(raw)
        assert str(info.value).startswith("refused:"), raw


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("../outside/secret.txt", "leads outside the workspace"),
        ("/etc/passwd", "is outside the workspace"),
        ("link_out/secret.txt", "symlink that leads outside"),
        ("secret_link", "symlink that leads outside"),
        ("src/\x00.py", "NUL byte"),
        ("src/" + "a" * 5000, "longer than 4096 characters"),
        ("x" * 300, "longer than 255 bytes"),
        ("src/\u202etxt.py", "invisible formatting character"),
        ("\uff0e\uff0e/outside", "look-alike"),
        ("src\u2215..", "look-alike of '/'"),
        ("..\\outside", "not '\\'"),
        ("a\nb", "control character"),
        ("src/\ud800.py", "lone surrogate"),
        (5, "must be a string"),
        ("", "a path is required"),
    ],
)
def test_refusals_say_why(ws: tuple[Path, Path], raw: object, reason: str) -> None:
    root, _ = ws
    with pytest.raises(PathRefused, match=None) as info:
        Sandbox(str(root)).resolve(raw)
    assert reason in str(info.value)


def test_paths_inside_are_accepted_and_named_relative(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    box = Sandbox(str(root))
    r = box.resolve("src/a.py")
    assert r.path == str(root / "src" / "a.py")
    assert r.real == os.path.realpath(root / "src" / "a.py")
    assert r.shown == "src/a.py"
    assert box.resolve("src/pkg/../a.py").path == r.path  # '..' that stays inside is fine
    assert box.resolve(str(root / "src" / "a.py")).path == r.path  # absolute inside
    assert box.resolve("./src//a.py").path == r.path
    assert box.resolve("file://" + str(root) + "/src/a.py").path == r.path
    assert box.resolve(".").shown == "."
    assert box.resolve(None, default=".").path == str(root)


def test_symlinks_that_stay_inside_are_followed(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    box = Sandbox(str(root))
    r = box.resolve("link_in/a.py")
    assert r.path == str(root / "link_in" / "a.py")  # what the editor knows
    assert r.real == os.path.realpath(root / "src" / "a.py")  # what is opened
    assert box.resolve("readme_link").real == os.path.realpath(root / "README.md")


def test_missing_files_resolve_so_writes_can_create_them(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    r = Sandbox(str(root)).resolve("new/dir/file.txt")
    assert r.path == str(root / "new" / "dir" / "file.txt")


def test_a_symlink_loop_is_not_an_escape_but_cannot_be_opened(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    (root / "loop").symlink_to(root / "loop")
    r = Sandbox(str(root)).resolve("loop")
    with pytest.raises(OSError):
        open(r.real)  # noqa: SIM115 - the OS refuses it; the tools report that


def test_extra_roots_are_reachable_by_absolute_path(tmp_path: Path) -> None:
    root, outside = build_workspace(tmp_path)
    box = Sandbox(str(root), [str(outside)])
    assert box.resolve(str(outside / "secret.txt")).shown == str(outside / "secret.txt")
    # ... and the symlink into it is no longer an escape.
    assert box.resolve("link_out/secret.txt").real == os.path.realpath(outside / "secret.txt")
    with pytest.raises(PathRefused):
        box.resolve("/etc/passwd")
    # Relative roots are ignored rather than resolved against the server's own cwd.
    assert Sandbox(str(root), ["relative/root"]).roots == (str(root),)


def test_a_cwd_reached_through_a_symlink(tmp_path: Path) -> None:
    real_ws, _ = build_workspace(tmp_path)
    alias = tmp_path / "alias"
    alias.symlink_to(real_ws, target_is_directory=True)
    box = Sandbox(str(alias))
    r = box.resolve("src/a.py")
    assert r.path == str(alias / "src" / "a.py")
    # The resolved spelling is accepted and mapped back to the workspace's spelling.
    via_real = box.resolve(str(real_ws / "src" / "a.py"))
    assert via_real.path == str(alias / "src" / "a.py")
    assert via_real.shown == "src/a.py"


def test_cwd_must_be_absolute() -> None:
    with pytest.raises(ValueError, match="absolute"):
        Sandbox("relative")
