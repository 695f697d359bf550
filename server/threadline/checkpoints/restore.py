"""Bringing a workspace back to a checkpoint, crash-safe, touching only what differs.

A restore of the paths a session changed (what rewinds and forks ask for) reads
those paths' entries off the target tree and compares each with its file; only
files that differ are written (each to a temporary file in its folder, then renamed
over the old one: a reader sees the old file or the new one, never half of one) or
deleted, and the workspace is never walked, whatever its size. The tree it leaves
is the shadow index told of those files (`Restored.tree`), so no snapshot follows
either. A restore of everything snapshots the workspace first to find what differs.
Before the first write a journal (``restore.json`` beside the shadow repository)
names the target; it is removed after the last. A process killed in between leaves
the journal, and the next process that opens this workspace's checkpoints (or
starts: `resume_all`) finishes the restore first: writing a file twice is harmless,
so resuming is running it again. Materializing writes a tree into a new, empty
folder (a fork worked on beside its parent).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from .git import Git
from .shadow import EMPTY_TREE, CheckpointError, ShadowRepo

log = logging.getLogger(__name__)

PAUSE_ENV = "THREADLINE_RESTORE_PAUSE"
"""Seconds to wait after each file written: only for the test that kills a restore
half-way (it cannot be caught mid-way otherwise); unset, no wait."""


@dataclass(frozen=True, slots=True)
class Restored:
    written: tuple[str, ...]
    deleted: tuple[str, ...]
    resumed: bool = False
    """The restore finished one a killed process had begun."""
    tree: str | None = None
    """The workspace's tree once restored (a checkpoint of it, taken without a walk)."""


def restore(repo: ShadowRepo, target: str, only: Collection[str] | None = None) -> Restored:
    """Make the workspace equal ``target`` for every file a snapshot covers, or only
    for the paths in ``only`` (what a session changed; anything else is left be)."""
    with repo.locked() as git:
        return _restore(repo, git, target, only)


def _restore(
    repo: ShadowRepo,
    git: Git,
    target: str,
    only: Collection[str] | None,
    *,
    resumed: bool = False,
) -> Restored:
    if only is None:
        writes, deletes = _all_differing(repo, git, target)
    else:
        writes, deletes = _named_differing(repo, git, target, only)
    if not writes and not deletes:
        repo.journal.unlink(missing_ok=True)
        return Restored((), (), resumed, _tree_after(git, [], []))
    _write_json(
        repo.journal,
        {
            "root": str(repo.root),
            "target": target,
            "only": None if only is None else sorted(only),
            "at": time.time(),
        },
    )
    pause = float(os.environ.get(PAUSE_ENV, "0") or 0)
    for path, mode, data in writes:
        _put(repo.root, path, mode, data)
        if pause:
            time.sleep(pause)
    for path in deletes:
        _remove(repo.root, path)
    tree = _tree_after(git, [p for p, _, _ in writes], deletes)
    repo.journal.unlink(missing_ok=True)
    return Restored(tuple(p for p, _, _ in writes), tuple(deletes), resumed, tree)


BATCH = 500
"""Paths named on one ``ls-tree`` command line (literal pathspecs)."""

Write = tuple[str, str, bytes]
"""(path, mode, contents) of a file a restore writes."""


def _all_differing(repo: ShadowRepo, git: Git, target: str) -> tuple[list[Write], list[str]]:
    """Every covered file that differs from ``target``: the workspace is snapshotted
    (the shadow index then names the files a checkpoint covers: ignored and
    oversized ones are not touched) and its tree compared with the target's."""
    current = repo.snapshot_locked(git).tree
    out = git.run(["diff-tree", "-r", "-z", "--no-renames", "--raw", current, target])
    entries: list[tuple[str, str, str]] = []
    deletes: list[str] = []
    parts = out.split(b"\0")
    i = 0
    while i < len(parts) and parts[i].startswith(b":"):
        meta = parts[i][1:].decode().split(" ")
        path = os.fsdecode(parts[i + 1])
        i += 2
        if meta[4] == "D":
            deletes.append(path)
        elif meta[1] != "160000":  # a nested repository: its files are its own
            entries.append((path, meta[1], meta[3]))
    contents = git.objects([blob for _, _, blob in entries])
    return [(p, m, c) for (p, m, _), c in zip(entries, contents, strict=True)], deletes


def _named_differing(
    repo: ShadowRepo, git: Git, target: str, only: Collection[str]
) -> tuple[list[Write], list[str]]:
    """Of the paths named, those whose file differs from ``target`` (content, kind or
    executable bit), read off the target tree and the files themselves: no walk of
    the workspace, whatever its size."""
    wanted = set(only)
    if not wanted:
        return [], []
    names = sorted(wanted)
    listing = b"".join(
        git.run(["ls-tree", "-r", "-z", "--full-tree", target, "--", *names[i : i + BATCH]])
        for i in range(0, len(names), BATCH)
    )
    entries: list[tuple[str, str, str]] = []
    for line in listing.split(b"\0"):
        if not line:
            continue
        meta, raw = line.split(b"\t", 1)
        path = os.fsdecode(raw)
        if path not in wanted:
            continue
        mode, kind, blob = meta.decode().split(" ")
        if kind == "blob":
            entries.append((path, mode, blob))
    present = {p for p, _, _ in entries}
    deletes = sorted(p for p in wanted - present if os.path.lexists(repo.root / p))
    deletes = [p for p in deletes if not _is_folder(repo.root / p)]
    contents = git.objects([blob for _, _, blob in entries])
    writes = [
        (path, mode, data)
        for (path, mode, _), data in zip(entries, contents, strict=True)
        if not _same(repo.root / path, mode, data)
    ]
    return writes, deletes


def _same(dest: Path, mode: str, data: bytes) -> bool:
    """Whether the file already is what the tree says (then it is not written)."""
    try:
        st = os.lstat(dest)
    except OSError:
        return False
    if mode == "120000":
        return stat.S_ISLNK(st.st_mode) and os.fsencode(os.readlink(dest)) == data
    if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
        return False
    if bool(st.st_mode & 0o100) != (mode == "100755"):
        return False
    with open(dest, "rb") as f:
        return f.read() == data


def _is_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _tree_after(git: Git, written: list[str], deleted: list[str]) -> str:
    """The workspace's tree once restored: the shadow index (fresh from the snapshot
    the restore was planned on) told of the files written and deleted, no walk."""
    if written or deleted:
        names = b"".join(os.fsencode(p) + b"\0" for p in [*written, *deleted])
        git.run(["update-index", "-z", "--add", "--remove", "--stdin"], stdin=names)
    return git.run(["write-tree"]).decode().strip()


def resume(repo: ShadowRepo) -> Restored | None:
    """Finish a restore a killed process left (its journal); None when there is none."""
    with repo.locked() as git:
        try:
            journal = json.loads(repo.journal.read_text())
            target, only = journal["target"], journal.get("only")
        except FileNotFoundError:
            return None
        except (ValueError, KeyError):
            repo.journal.unlink(missing_ok=True)
            return None
        log.warning("finishing the restore of %s to %s that was cut short", repo.root, target)
        return _restore(repo, git, target, only, resumed=True)


def resume_all(data_dir: Path) -> list[Restored]:
    """At start: every workspace whose restore was cut short, finished."""
    done: list[Restored] = []
    base = data_dir / "checkpoints"
    if not base.is_dir():
        return done
    for journal in base.glob("*/restore.json"):
        try:
            root = json.loads(journal.read_text())["root"]
            repo = ShadowRepo.for_root(data_dir, root)
            if repo.home != journal.parent:
                continue
            got = resume(repo)
        except Exception:
            log.exception("could not finish the restore in %s", journal.parent)
            continue
        if got is not None:
            done.append(got)
    return done


def materialize(repo: ShadowRepo, tree: str, dest: Path) -> list[str]:
    """Write every file of ``tree`` into ``dest`` (new or empty); returns their paths."""
    if dest.exists() and any(dest.iterdir()):
        raise CheckpointError(f"{dest} is not empty: a fork's files go into a new folder")
    dest.mkdir(parents=True, exist_ok=True)
    if tree == EMPTY_TREE:
        return []
    with repo.locked() as git:
        index = repo.home / f"materialize-{os.getpid()}.index"
        env = git.env(work_tree=dest, index=index)
        try:
            git.run(["read-tree", tree], env=env)
            git.run(["checkout-index", "-a", "-f"], env=env)
            listed = git.run(["ls-files", "-z"], env=env)
        finally:
            index.unlink(missing_ok=True)
    return [os.fsdecode(p) for p in listed.split(b"\0") if p]


def _put(root: Path, path: str, mode: str, data: bytes) -> None:
    """One file, atomically: a temporary file beside it renamed over it."""
    dest = root / path
    if dest.is_dir() and not dest.is_symlink():
        raise CheckpointError(f"{path} is a folder now; not replaced by a file")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.threadline-{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    if mode == "120000":
        os.symlink(os.fsdecode(data), tmp)
    else:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(fd, _file_mode(mode))
            os.fsync(fd)
    os.replace(tmp, dest)


def _file_mode(mode: str) -> int:
    """Executable or not as the tree says, within the process's umask."""
    umask = os.umask(0)
    os.umask(umask)
    base = 0o777 if mode == "100755" else 0o666
    return stat.S_IMODE(base & ~umask)


def _remove(root: Path, path: str) -> None:
    dest = root / path
    with contextlib.suppress(FileNotFoundError):
        dest.unlink()
    parent = dest.parent
    while parent != root and parent.is_relative_to(root):
        try:
            parent.rmdir()  # only if it became empty
        except OSError:
            break
        parent = parent.parent


def _write_json(path: Path, value: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)
