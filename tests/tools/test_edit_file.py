"""``edit_file`` on a real temporary workspace: exact replacement on disk and through
the editor, the refusals that write nothing, and the diff shown before and after."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.tools.fakes import FakeEditor, build_workspace, make_ctx
from threadline.tools.base import ToolOutcome, preview_of
from threadline.tools.workspace import EditFile, WriteFile
from threadline.tools.workspace.textfile import FILE_MAX_BYTES

pytestmark = pytest.mark.timeout(60)

SOURCE = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


def text_of(outcome: ToolOutcome) -> str:
    return outcome.content[0]["text"]


def one(old: str, new: str, **extra: Any) -> dict[str, Any]:
    return {"oldText": old, "newText": new, **extra}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root, _ = build_workspace(tmp_path)
    (root / "calc.py").write_text(SOURCE)
    return root


async def test_one_exact_edit_on_disk_keeps_the_mode_and_shows_the_diff(ws: Path) -> None:
    target = ws / "calc.py"
    target.chmod(0o750)
    inode = target.stat().st_ino
    ctx = make_ctx(ws, FakeEditor())
    args = {
        "path": "calc.py",
        "edits": [one("def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b")],
    }
    expected = SOURCE.replace("return a - b", "return a + b", 1)
    preview = await preview_of(EditFile(), args, ctx)
    assert preview == [
        {"type": "diff", "path": str(target), "oldText": SOURCE, "newText": expected}
    ]
    assert target.read_text() == SOURCE  # a preview writes nothing
    out = await EditFile().run(args, ctx)
    assert not out.is_error, text_of(out)
    assert target.read_text() == expected
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert target.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert not [p for p in os.listdir(ws) if p.endswith(".tmp")]
    assert text_of(out).startswith("Edited calc.py (-1 +1 lines):\n--- a/calc.py\n+++ b/calc.py")
    assert "+    return a + b" in text_of(out)
    assert out.display == preview
    assert out.raw_output["writtenBy"] == "disk"


async def test_edits_apply_in_order_to_what_the_previous_ones_made(ws: Path) -> None:
    ctx = make_ctx(ws, FakeEditor())
    edits = [
        one("def add", "def plus"),
        one("def plus(a, b):\n    return a - b", "def plus(a, b):\n    return a + b"),
    ]
    out = await EditFile().run({"path": "calc.py", "edits": edits}, ctx)
    assert not out.is_error, text_of(out)
    assert (ws / "calc.py").read_text().startswith("def plus(a, b):\n    return a + b\n")


async def test_replace_all_and_several_matches(ws: Path) -> None:
    ctx = make_ctx(ws, FakeEditor())
    out = await EditFile().run({"path": "calc.py", "edits": [one("a - b", "a * b")]}, ctx)
    assert out.is_error
    assert "occurs 2 times (at lines 2, 6)" in text_of(out)
    assert "replaceAll" in text_of(out)
    assert (ws / "calc.py").read_text() == SOURCE
    edits = [one("a - b", "a * b", replaceAll=True)]
    out = await EditFile().run({"path": "calc.py", "edits": edits}, ctx)
    assert not out.is_error
    assert (ws / "calc.py").read_text().count("a * b") == 2


async def test_no_match_quotes_the_closest_lines_with_numbers(ws: Path) -> None:
    ctx = make_ctx(ws, FakeEditor())
    edits = [one("def sub(a,b):\n  return a-b", "x")]
    out = await EditFile().run({"path": "calc.py", "edits": edits}, ctx)
    assert out.is_error
    text = text_of(out)
    assert "oldText was not found" in text
    assert "5| def sub(a, b):" in text and "6|     return a - b" in text
    assert (ws / "calc.py").read_text() == SOURCE
    assert await preview_of(EditFile(), {"path": "calc.py", "edits": edits}, ctx) == []


async def test_a_failing_later_edit_writes_nothing(ws: Path) -> None:
    ctx = make_ctx(ws, FakeEditor())
    edits = [one("def add", "def plus"), one("no such text", "y")]
    out = await EditFile().run({"path": "calc.py", "edits": edits}, ctx)
    assert out.is_error and "edit 2: oldText was not found" in text_of(out)
    assert (ws / "calc.py").read_text() == SOURCE


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"path": "calc.py", "edits": [one("def add", "def add")]}, "changes nothing"),
        ({"path": "calc.py", "edits": [one("", "x")]}, "oldText is empty"),
        ({"path": "missing.py", "edits": [one("x", "y")]}, "no such file; to create it"),
        ({"path": "calc.py", "edits": []}, "non-empty list"),
        ({"path": "calc.py", "edits": [{"oldText": 1, "newText": "y"}]}, "must both be strings"),
        ({"path": ".git/config", "edits": [one("hello", "bye")]}, "version-control"),
        ({"path": "src", "edits": [one("x", "y")]}, "this is a directory"),
        ({"path": "big.txt", "edits": [one("y", "z")]}, "over the 1.0 MiB"),
        ({"path": "blob.bin", "edits": [one("a", "b")]}, "binary file"),
        ({"path": "calc.py", "edits": [one("def add", "x" * FILE_MAX_BYTES)]}, "larger than"),
    ],
)
async def test_refusals_write_nothing(ws: Path, args: dict[str, Any], message: str) -> None:
    (ws / "big.txt").write_text("y" * (FILE_MAX_BYTES + 10))
    (ws / "blob.bin").write_bytes(b"a\x00b" * 10)
    before = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and not p.is_symlink()}
    editor = FakeEditor(read=True, write=True)
    out = await EditFile().run(args, make_ctx(ws, editor))
    assert out.is_error and message in text_of(out), text_of(out)
    after = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and not p.is_symlink()}
    assert after == before
    assert "fs/write_text_file" not in editor.methods()


async def test_create_a_missing_file_with_an_empty_old_text(ws: Path) -> None:
    ctx = make_ctx(ws, FakeEditor())
    args = {"path": "pkg/new/util.py", "edits": [one("", "X = 1\n")]}
    assert await preview_of(EditFile(), args, ctx) == [
        {"type": "diff", "path": str(ws / "pkg/new/util.py"), "newText": "X = 1\n"}
    ]
    out = await EditFile().run(args, ctx)
    assert not out.is_error, text_of(out)
    assert (ws / "pkg/new/util.py").read_text() == "X = 1\n"
    assert text_of(out).startswith("Created pkg/new/util.py (-0 +1 lines)")
    assert out.raw_output["created"] is True


async def test_the_editors_unsaved_buffer_is_what_is_edited(ws: Path) -> None:
    editor = FakeEditor(read=True, write=True)
    unsaved = SOURCE.replace("def sub", "def minus")
    editor.buffers[str(ws / "calc.py")] = unsaved
    ctx = make_ctx(ws, editor)
    args = {
        "path": "calc.py",
        "edits": [one("def minus(a, b):\n    return a - b", "def minus(a, b):\n    return b - a")],
    }
    out = await EditFile().run(args, ctx)
    assert not out.is_error, text_of(out)
    written = unsaved[: unsaved.index("def minus")] + "def minus(a, b):\n    return b - a\n"
    assert editor.methods() == ["fs/read_text_file", "fs/write_text_file"]
    assert editor.requests[1][1]["content"] == written
    assert (ws / "calc.py").read_text() == written
    assert out.raw_output["writtenBy"] == "editor"


async def test_crlf_files_match_text_written_with_newlines(ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    ctx = make_ctx(ws, FakeEditor())
    out = await EditFile().run({"path": "win.txt", "edits": [one("one\ntwo", "one\n2")]}, ctx)
    assert not out.is_error, text_of(out)
    assert (ws / "win.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"


async def test_a_symlink_swapped_in_for_the_folder_is_not_followed(
    tmp_path: Path, ws: Path
) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "f.txt").write_text("a\n")
    ctx = make_ctx(ws, FakeEditor())
    tool = EditFile()
    outside = tmp_path / "outside"
    # The check passes, then the folder becomes a link to outside before the write.
    from threadline.tools.workspace import textfile

    real_save = textfile.save

    async def swapping_save(*a: Any, **k: Any) -> str:
        os.rename(ws / "sub", ws / "sub_moved")
        os.symlink(outside, ws / "sub")
        return await real_save(*a, **k)

    textfile.save = swapping_save  # type: ignore[assignment]
    try:
        out = await tool.run({"path": "sub/f.txt", "edits": [one("a", "pwned")]}, ctx)
    finally:
        textfile.save = real_save  # type: ignore[assignment]
    assert out.is_error and "symlink" in text_of(out), text_of(out)
    assert not (outside / "f.txt").exists()


async def test_write_file_shows_the_diff_against_what_is_there(ws: Path) -> None:
    editor = FakeEditor(write=True)
    ctx = make_ctx(ws, editor)
    args = {"path": "calc.py", "content": "print(1)\n"}
    diff = {"type": "diff", "path": str(ws / "calc.py"), "oldText": SOURCE, "newText": "print(1)\n"}
    assert await preview_of(WriteFile(), args, ctx) == [diff]
    out = await WriteFile().run(args, ctx)
    assert not out.is_error
    assert out.display == [diff]
    new = {"path": "fresh.txt", "content": "hi\n"}
    assert await preview_of(WriteFile(), new, ctx) == [
        {"type": "diff", "path": str(ws / "fresh.txt"), "newText": "hi\n"}
    ]
