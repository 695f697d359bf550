"""The built-in workspace tools on a real temporary workspace.

Every file tool is run against the whole escape corpus; reads are checked for ranges
and bounds, on disk and through the editor's ``fs/read_text_file``; searches for
their bounds in matches, files and time; ``write_file`` for when it exists and how
it writes.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.tools.fakes import FakeEditor, build_workspace, escape_corpus, make_ctx
from threadline.tools.base import ToolOutcome
from threadline.tools.factory import builtin_tools
from threadline.tools.workspace import (
    EditFile,
    ListDirectory,
    ReadFile,
    SearchText,
    WriteFile,
    read_file,
    search_text,
    workspace_tools,
)

pytestmark = pytest.mark.timeout(60)


def write_one_huge_line(path: Path, size: int) -> None:
    with open(path, "w") as f:
        f.write("y" * size + "\nafter\n")


def text_of(outcome: ToolOutcome) -> str:
    assert [c["type"] for c in outcome.content] == ["text"]
    return outcome.content[0]["text"]


@pytest.fixture
def ws(tmp_path: Path) -> tuple[Path, Path]:
    return build_workspace(tmp_path)


# -- confinement, for every file tool ------------------------------------------------------


def _calls(path: object) -> list[tuple[Any, dict[str, Any]]]:
    return [
        (ReadFile(), {"path": path}),
        (ReadFile(), {"path": path, "startLine": 1, "endLine": 2}),
        (ListDirectory(), {"path": path}),
        (SearchText(), {"pattern": "SECRET|root", "path": path}),
        (WriteFile(), {"path": path, "content": "pwned\n"}),
        (EditFile(), {"path": path, "edits": [{"oldText": "", "newText": "pwned\n"}]}),
        (EditFile(), {"path": path, "edits": [{"oldText": "TOP", "newText": "pwned"}]}),
    ]


@pytest.mark.parametrize("editor_reads", [False, True])
async def test_escape_corpus_is_refused_by_every_file_tool(
    ws: tuple[Path, Path], editor_reads: bool
) -> None:
    root, outside = ws
    editor = FakeEditor(read=editor_reads, write=True)
    ctx = make_ctx(root, editor)
    before = sorted(p.name for p in outside.iterdir())
    for raw in escape_corpus(root, outside):
        for tool, args in _calls(raw):
            outcome = await tool.run(args, ctx)
            text = text_of(outcome)
            assert outcome.is_error, (tool.name, raw, text)
            assert text.startswith("refused:"), (tool.name, raw, text)
            assert "TOP SECRET" not in text
            assert tool.locations(args, ctx) == []
    # Nothing reached the editor and nothing was written outside.
    assert editor.requests == []
    assert sorted(p.name for p in outside.iterdir()) == before
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


async def test_listing_and_search_never_follow_links_out(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    ctx = make_ctx(root, FakeEditor())
    listing = text_of(await ListDirectory().run({}, ctx))
    assert "link_out -> (outside the workspace; not followed)" in listing
    assert "secret_link -> (outside the workspace; not followed)" in listing
    assert "link_in/ -> src" in listing
    assert "readme_link -> README.md" in listing
    found = await SearchText().run({"pattern": "SECRET"}, ctx)
    assert "No matches" in text_of(found)
    assert "symlinked" in text_of(found)
    assert found.raw_output["matches"] == []


# -- read_file --------------------------------------------------------------------------------


async def test_read_whole_file_and_ranges(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    ctx = make_ctx(root, FakeEditor())
    tool = ReadFile()
    whole = await tool.run({"path": "src/a.py"}, ctx)
    assert not whole.is_error
    assert text_of(whole) == (
        "src/a.py (lines 1-4 of 4)\nimport os\n\ndef hello():\n    return 'hello'"
    )
    assert whole.raw_output["source"] == "disk"
    assert whole.raw_output["totalLines"] == 4
    part = await tool.run({"path": "src/a.py", "startLine": 3, "endLine": 4}, ctx)
    assert text_of(part) == "src/a.py (lines 3-4 of 4)\ndef hello():\n    return 'hello'"
    # Numbers as strings (small models send them) and an end past the file.
    loose = await tool.run({"path": "src/a.py", "startLine": "4", "endLine": "99"}, ctx)
    assert text_of(loose) == "src/a.py (lines 4-4 of 4)\n    return 'hello'"
    assert tool.locations({"path": "src/a.py", "startLine": 3}, ctx) == [
        {"path": str(root / "src" / "a.py"), "line": 3}
    ]
    assert tool.title({"path": "src/a.py", "startLine": 3}) == "Read src/a.py (lines 3-end)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"path": "src/a.py", "startLine": 9}, "startLine 9 is past the end of the file (4 lines)"),
        ({"path": "src/a.py", "startLine": 3, "endLine": 2}, "endLine 2 is before startLine 3"),
        ({"path": "src/a.py", "startLine": 0}, "startLine must be at least 1"),
        ({"path": "src/a.py", "startLine": "x"}, "startLine must be an integer"),
        ({"path": "src/a.py", "startLine": True}, "startLine must be an integer"),
        ({"path": "src"}, "this is a directory; use list_directory"),
        ({"path": "nope.txt"}, "'nope.txt': no such file"),
        ({}, "refused: a path is required"),
    ],
)
async def test_read_argument_errors(
    ws: tuple[Path, Path], args: dict[str, Any], message: str
) -> None:
    root, _ = ws
    outcome = await ReadFile().run(args, make_ctx(root, FakeEditor()))
    assert outcome.is_error
    assert message in text_of(outcome)


async def test_read_is_bounded_in_lines_and_characters(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    ctx = make_ctx(root, FakeEditor())
    (root / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 1201)))
    first = await ReadFile().run({"path": "big.txt"}, ctx)
    text = text_of(first)
    assert text.startswith("big.txt (lines 1-500 of 1200)\nline 1\n")
    assert text.endswith("line 500\n[700 more lines; call read_file with startLine=501 to read on]")
    assert first.raw_output["truncated"] is True
    nxt = await ReadFile().run({"path": "big.txt", "startLine": 1101}, ctx)
    assert text_of(nxt).startswith("big.txt (lines 1101-1200 of 1200)\nline 1101")
    assert text_of(nxt).endswith("line 1200")
    ranged = await ReadFile(max_lines=10).run(
        {"path": "big.txt", "startLine": 5, "endLine": 30}, ctx
    )
    assert text_of(ranged).endswith(
        "line 14\n[16 more lines; call read_file with startLine=15 to read on]"
    )
    narrow = await ReadFile(max_chars=40).run({"path": "big.txt"}, ctx)
    assert text_of(narrow).startswith("big.txt (lines 1-5 of 1200)\nline 1\n")


async def test_long_lines_are_cut_and_huge_lines_never_load_whole(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    ctx = make_ctx(root, FakeEditor())
    (root / "wide.txt").write_text("x" * 10_000 + "\nshort\n")
    text = text_of(await ReadFile().run({"path": "wide.txt"}, ctx))
    assert f"[…{10_000 - read_file.LINE_MAX_CHARS} more characters]" in text
    assert text.endswith("\nshort")
    # 20 MiB on one line: counted right, shown cut, and fast.
    write_one_huge_line(root / "one_line.txt", 20 << 20)
    began = time.monotonic()
    huge = await ReadFile().run({"path": "one_line.txt", "startLine": 2}, ctx)
    assert text_of(huge) == "one_line.txt (lines 2-2 of 2)\nafter"
    assert time.monotonic() - began < 10


async def test_read_refuses_binary_and_special_files(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    ctx = make_ctx(root, FakeEditor())
    (root / "blob.bin").write_bytes(b"\x89PNG\x00\x01\x02")
    binary = await ReadFile().run({"path": "blob.bin"}, ctx)
    assert binary.is_error and "binary" in text_of(binary)
    os.mkfifo(root / "pipe")
    fifo = await ReadFile().run({"path": "pipe"}, ctx)  # would block forever if opened
    assert fifo.is_error and "not a regular file" in text_of(fifo)


async def test_read_empty_and_crlf_files(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    ctx = make_ctx(root, FakeEditor())
    (root / "empty.txt").write_text("")
    assert text_of(await ReadFile().run({"path": "empty.txt"}, ctx)) == "empty.txt (empty file)"
    (root / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    assert text_of(await ReadFile().run({"path": "dos.txt"}, ctx)) == (
        "dos.txt (lines 1-2 of 2)\none\ntwo"
    )


async def test_read_goes_through_the_editor_when_it_offers(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    editor = FakeEditor(read=True)
    path = str(root / "src" / "a.py")
    editor.buffers[path] = "import sys  # unsaved edit\n\ndef hello():\n    return 'hi'\n"
    ctx = make_ctx(root, editor)
    outcome = await ReadFile().run({"path": "src/a.py"}, ctx)
    assert text_of(outcome) == (
        "src/a.py (lines 1-4 of 4)\nimport sys  # unsaved edit\n\ndef hello():\n    return 'hi'"
    )
    assert outcome.raw_output["source"] == "editor"
    assert editor.requests == [
        (
            "fs/read_text_file",
            {"sessionId": "sess_test", "path": path, "line": 1, "limit": 501},
        )
    ]
    part = await ReadFile().run({"path": "src/a.py", "startLine": 3, "endLine": 3}, ctx)
    assert text_of(part) == "src/a.py (lines 3-3)\ndef hello():"
    assert editor.requests[-1][1]["line"] == 3 and editor.requests[-1][1]["limit"] == 2
    # A file the editor has no buffer for is read by the editor from disk.
    readme = await ReadFile().run({"path": "link_in/pkg/b.py"}, ctx)
    assert "return hello()" in text_of(readme)
    assert editor.requests[-1][1]["path"] == str(root / "link_in" / "pkg" / "b.py")


async def test_editor_reads_are_bounded_and_errors_reported(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    editor = FakeEditor(read=True)
    editor.buffers[str(root / "big.txt")] = "".join(f"l{i}\n" for i in range(1, 51))
    ctx = make_ctx(root, editor)
    out = await ReadFile(max_lines=10).run({"path": "big.txt"}, ctx)
    assert text_of(out).startswith("big.txt (lines 1-10)\nl1\n")
    assert text_of(out).endswith(
        "l10\n[more lines follow; call read_file with startLine=11 to read on]"
    )
    editor.ignore_limit = True  # an editor that sends the whole file anyway
    again = await ReadFile(max_lines=10).run({"path": "big.txt", "startLine": 5}, ctx)
    assert text_of(again).startswith("big.txt (lines 5-14)\nl5\n")  # sliced by us
    assert text_of(again).endswith(
        "l14\n[more lines follow; call read_file with startLine=15 to read on]"
    )
    missing = await ReadFile().run({"path": "gone.txt"}, ctx)
    assert missing.is_error
    assert "the editor could not read it: file not found" in text_of(missing)
    editor.ignore_limit = False
    past = await ReadFile().run({"path": "big.txt", "startLine": 99}, ctx)
    assert past.is_error and "past the end" in text_of(past)


# -- list_directory ---------------------------------------------------------------------------


async def test_list_directory(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    ctx = make_ctx(root, FakeEditor())
    listing = await ListDirectory().run({"path": "src"}, ctx)
    assert text_of(listing) == "src/ (2 entries)\npkg/\na.py (43 B)"
    top = text_of(await ListDirectory().run({}, ctx))
    assert top.splitlines()[:3] == ["./ (7 entries)", ".git/", "src/"]
    (root / "void").mkdir()
    assert text_of(await ListDirectory().run({"path": "void"}, ctx)) == "void/ (empty directory)"
    not_dir = await ListDirectory().run({"path": "README.md"}, ctx)
    assert not_dir.is_error and "not a directory" in text_of(not_dir)
    missing = await ListDirectory().run({"path": "nope"}, ctx)
    assert missing.is_error and "no such directory" in text_of(missing)
    for i in range(30):
        (root / "void" / f"f{i:02}").write_text("")
    bounded = text_of(await ListDirectory(max_entries=10).run({"path": "void"}, ctx))
    assert bounded.splitlines()[0] == "void/ (30 entries)"
    assert bounded.splitlines()[-1] == "[20 more entries not shown]"
    assert ListDirectory().locations({}, ctx) == [{"path": str(root)}]


# -- search_text ------------------------------------------------------------------------------


async def test_search_finds_lines_and_skips_git(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    ctx = make_ctx(root, FakeEditor())
    out = await SearchText().run({"pattern": r"hello"}, ctx)
    assert text_of(out).splitlines() == [
        "4 matching lines in 3 files (3 files searched)",
        "README.md:2: Say hello.",
        "src/a.py:3: def hello():",
        "src/a.py:4: return 'hello'",
        "src/pkg/b.py:2: return hello()  # hello",
        "[skipped files: 2 symlinked]",
    ]
    assert out.raw_output["matches"][0] == {"path": "README.md", "line": 2, "text": "Say hello."}
    nocase = await SearchText().run({"pattern": "^def hello", "ignoreCase": True}, ctx)
    assert [m["path"] for m in nocase.raw_output["matches"]] == ["src/a.py", "src/pkg/b.py"]
    only_md = await SearchText().run({"pattern": "hello", "include": "*.md"}, ctx)
    assert [m["path"] for m in only_md.raw_output["matches"]] == ["README.md"]
    sub = await SearchText().run({"pattern": "hello", "path": "src/pkg"}, ctx)
    assert [m["path"] for m in sub.raw_output["matches"]] == ["src/pkg/b.py"]
    one = await SearchText().run({"pattern": "import", "path": "src/a.py"}, ctx)
    assert one.raw_output["matches"] == [{"path": "src/a.py", "line": 1, "text": "import os"}]
    via_link = await SearchText().run({"pattern": "import", "path": "link_in"}, ctx)
    assert via_link.raw_output["matches"][0]["path"] == "link_in/a.py"


async def test_search_is_bounded(ws: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = ws
    ctx = make_ctx(root, FakeEditor())
    (root / "many.txt").write_text("match\n" * 500)
    limited = await SearchText().run({"pattern": "match", "maxResults": 7}, ctx)
    assert len(limited.raw_output["matches"]) == 7
    assert limited.raw_output["truncated"] is True
    assert "stopped at the result limit" in text_of(limited)
    capped = await SearchText().run({"pattern": "match", "maxResults": 10_000}, ctx)
    assert len(capped.raw_output["matches"]) == search_text.SEARCH_MAX_RESULTS
    (root / "wide.txt").write_text("z" * 5000 + "NEEDLE" + "z" * 5000 + "\n")
    wide = await SearchText().run({"pattern": "NEEDLE"}, ctx)
    shown = wide.raw_output["matches"][0]["text"]
    assert "NEEDLE" in shown and len(shown) <= search_text.SEARCH_SHOW_CHARS + 2
    (root / "data.bin").write_bytes(b"match\x00\x00")
    monkeypatch.setattr(search_text, "SEARCH_MAX_FILE_BYTES", 1000)
    skipped = await SearchText().run({"pattern": "NEEDLE"}, ctx)
    assert skipped.raw_output["matches"] == []
    assert "skipped files: 1 binary, 2 larger than 1000 B" in text_of(skipped)


async def test_search_stops_at_its_time_limit(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    ctx = make_ctx(root, FakeEditor())
    (root / "evil.txt").write_text("a" * 60 + "b\n")
    began = time.monotonic()
    out = await SearchText(seconds=0.5).run({"pattern": r"(a|aa)+$", "include": "evil.txt"}, ctx)
    assert time.monotonic() - began < 5
    assert out.raw_output["timedOut"] is True
    assert "stopped at the time limit" in text_of(out)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"pattern": "("}, "invalid regular expression"),
        ({}, "pattern is required"),
        ({"pattern": "x" * 2000}, "longer than"),
        ({"pattern": "x", "path": "nope"}, "no such file or directory"),
        ({"pattern": "x", "maxResults": 0}, "maxResults must be at least 1"),
    ],
)
async def test_search_argument_errors(
    ws: tuple[Path, Path], args: dict[str, Any], message: str
) -> None:
    root, _ = ws
    out = await SearchText().run(args, make_ctx(root, FakeEditor()))
    assert out.is_error and message in text_of(out)


# -- write_file -------------------------------------------------------------------------------


def test_write_file_exists_only_when_the_editor_writes() -> None:
    names = [t.name for t in builtin_tools({"fs": {"readTextFile": True}})]
    changers = ["edit_file", "run_command", "update_plan"]
    assert names == ["read_file", "list_directory", "search_text", *changers]
    assert [t.name for t in builtin_tools({})] == names
    assert [t.name for t in workspace_tools({})] == names[:4]
    tools = {t.name: t for t in builtin_tools({"fs": {"writeTextFile": True}})}
    assert list(tools) == [*names[:3], "write_file", *changers]
    for name in ("write_file", "edit_file", "run_command"):
        assert tools[name].needs_permission is True
        assert tools[name].parallelizable is False
    assert tools["write_file"].kind == tools["edit_file"].kind == "edit"
    assert tools["run_command"].kind == "execute"
    for name in names[:3]:
        assert tools[name].needs_permission is False
        assert tools[name].parallelizable is True
        assert tools[name].kind in ("read", "search")
        assert 0 < tools[name].timeout <= 60


async def test_write_file_writes_through_the_editor(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    editor = FakeEditor(write=True)
    ctx = make_ctx(root, editor)
    out = await WriteFile().run({"path": "notes/todo.txt", "content": "a\nb\n"}, ctx)
    assert not out.is_error
    assert text_of(out) == "Wrote notes/todo.txt (2 lines, 4 bytes)"
    assert editor.requests == [
        (
            "fs/write_text_file",
            {
                "sessionId": "sess_test",
                "path": str(root / "notes" / "todo.txt"),
                "content": "a\nb\n",
            },
        )
    ]
    assert (root / "notes" / "todo.txt").read_text() == "a\nb\n"
    assert WriteFile().locations({"path": "notes/todo.txt"}, ctx) == [
        {"path": str(root / "notes" / "todo.txt")}
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"path": ".git/config", "content": "x"}, "version-control"),
        ({"path": "src", "content": "x"}, "this is a directory"),
        ({"path": "a.txt", "content": 5}, "content must be a string"),
        ({"path": "a.txt", "content": "x" * (1 << 21)}, "larger than"),
    ],
)
async def test_write_file_refusals(
    ws: tuple[Path, Path], args: dict[str, Any], message: str
) -> None:
    root, _ = ws
    editor = FakeEditor(write=True)
    out = await WriteFile().run(args, make_ctx(root, editor))
    assert out.is_error and message in text_of(out)
    assert editor.requests == []


async def test_write_file_without_the_capability_does_nothing(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    editor = FakeEditor(write=False)
    out = await WriteFile().run({"path": "a.txt", "content": "x"}, make_ctx(root, editor))
    assert out.is_error and "does not accept file writes" in text_of(out)
    assert editor.requests == [] and not (root / "a.txt").exists()
