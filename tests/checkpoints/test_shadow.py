"""The shadow repository itself, with real git: the limits (a new file over the size
limit, a workspace over the file-count limit), the data folder inside the workspace,
and a restore of named paths that walks nothing and leaves the tree a snapshot would."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from threadline.checkpoints import Limits, ShadowRepo, TooManyFiles
from threadline.checkpoints.restore import restore


def files_of(repo: ShadowRepo, tree: str) -> set[str]:
    out = repo.git.run(["ls-tree", "-r", "-z", "--name-only", tree])
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def shadow(tmp_path: Path, ws: Path, **limits: int) -> ShadowRepo:
    return ShadowRepo.for_root(tmp_path / "data", str(ws), Limits(**limits))


def test_a_new_file_over_the_size_limit_is_left_out_and_the_rest_captured(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    repo = shadow(tmp_path, ws, max_file_bytes=1000)
    first = repo.snapshot()
    assert files_of(repo, first.tree) == {"a.txt"} and first.skipped == ()
    (ws / "big.bin").write_bytes(b"x" * 5000)
    (ws / "b.txt").write_text("b\n")
    (ws / "a.txt").write_text("a2\n")
    second = repo.snapshot()
    assert second.skipped == ("big.bin",)
    assert files_of(repo, second.tree) == {"a.txt", "b.txt"}
    assert not (repo.home / "index.lock").exists()
    assert not (repo.home / "index.before").exists()
    third = repo.snapshot()  # left out from then on, without being listed again
    assert third.tree == second.tree and third.skipped == ()


def test_over_the_file_count_limit_nothing_is_taken_and_the_index_stays(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(3):
        (ws / f"f{i}.txt").write_text(f"{i}\n")
    repo = shadow(tmp_path, ws, max_files=5)
    first = repo.snapshot().tree
    index = (repo.home / "index").read_bytes()
    (ws / "many").mkdir()
    for i in range(4):
        (ws / "many" / f"m{i}.txt").write_text(f"{i}\n")
    with pytest.raises(TooManyFiles):
        repo.snapshot()
    assert (repo.home / "index").read_bytes() == index  # the stopped add undone
    assert not (repo.home / "index.lock").exists()
    (ws / ".gitignore").write_text("many/\n")
    again = repo.snapshot().tree
    assert files_of(repo, again) == files_of(repo, first) | {".gitignore"}


def test_the_data_folder_inside_the_workspace_is_never_captured(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "main.py").write_text("print(1)\n")
    data = ws / ".threadline-home"
    repo = ShadowRepo.for_root(data, str(ws))
    tree = repo.snapshot().tree
    assert files_of(repo, tree) == {"src/main.py"}
    assert any(data.rglob("index"))  # the shadow repository is in there, not captured
    (data / "sessions.db").write_text("a store\n")
    (ws / "src" / "main.py").write_text("print(2)\n")
    later = repo.snapshot().tree
    assert files_of(repo, later) == {"src/main.py"}
    restore(repo, tree)  # a whole-tree restore leaves the data folder be
    assert (data / "sessions.db").read_text() == "a store\n"
    assert (ws / "src" / "main.py").read_text() == "print(1)\n"


def test_a_restore_of_named_paths_writes_only_what_differs(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "same.txt").write_text("same\n")
    (ws / "d" / "edited.txt").write_text("old\n")
    (ws / "run.sh").write_text("#!/bin/sh\n")
    (ws / "run.sh").chmod(0o755)
    os.symlink("same.txt", ws / "link")
    repo = shadow(tmp_path, ws)
    target = repo.snapshot().tree
    (ws / "d" / "edited.txt").write_text("new\n")
    (ws / "d" / "created.txt").write_text("created\n")
    (ws / "run.sh").chmod(0o644)
    (ws / "link").unlink()
    os.symlink("d/edited.txt", ws / "link")
    (ws / "user.txt").write_text("the user's, not named\n")
    repo.snapshot()
    named = ["d/edited.txt", "d/created.txt", "run.sh", "link", "same.txt"]
    done = restore(repo, target, named)
    assert sorted(done.written) == ["d/edited.txt", "link", "run.sh"]  # same.txt: equal
    assert done.deleted == ("d/created.txt",)
    assert (ws / "d" / "edited.txt").read_text() == "old\n"
    assert os.access(ws / "run.sh", os.X_OK)
    assert os.readlink(ws / "link") == "same.txt"
    assert (ws / "user.txt").exists()
    after = repo.snapshot().tree
    assert done.tree == after  # the tree it leaves is the workspace's
    assert files_of(repo, after) == files_of(repo, target) | {"user.txt"}
    assert restore(repo, target, named).written == ()  # nothing differs any more
