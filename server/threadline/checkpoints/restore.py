"""Bringing a workspace back to a checkpoint, crash-safe, touching only what differs.

A restore first snapshots the workspace as it is, so it knows exactly which files
differ from the target tree; only those are written (each to a temporary file in its
folder, then renamed over the old one: a reader sees the old file or the new one,
never half of one) or deleted. Before the first write a journal
(``restore.json`` beside the shadow repository) names the target; it is removed
after the last. A process killed in between leaves the journal, and the next process
that opens this workspace's checkpoints (or starts: `resume_all`) finishes the
restore first: writing a file twice is harmless, so resuming is running it again.
Materializing writes a tree into a new, empty folder (a fork worked on beside its
parent).
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
    # The shadow index is the snapshot just taken of the workspace: it names the
    # files a checkpoint covers (ignored and oversized ones are not touched).
    current = repo.snapshot_locked(git).tree
    out = git.run(["diff-tree", "-r", "-z", "--no-renames", "--raw", current, target])
    writes: list[tuple[str, str, str]] = []
    deletes: list[str] = []
    parts = out.split(b"\0")
    i = 0
    while i < len(parts) and parts[i].startswith(b":"):
        meta = parts[i][1:].decode().split(" ")
        path = os.fsdecode(parts[i + 1])
        i += 2
        if only is not None and path not in only:
            continue
        if meta[4] == "D":
            deletes.append(path)
        else:
            writes.append((path, meta[1], meta[3]))
    if not writes and not deletes:
        repo.journal.unlink(missing_ok=True)
        return Restored((), (), resumed)
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
    contents = git.objects([blob for _, mode, blob in writes if mode != "160000"])
    it = iter(contents)
    for path, mode, _blob in writes:
        if mode == "160000":
            continue  # a nested repository: its files are its own
        _put(repo.root, path, mode, next(it))
        if pause:
            time.sleep(pause)
    for path in deletes:
        _remove(repo.root, path)
    # The shadow index still holds the files as they were: the next snapshot reads
    # the few written again (their size or time changed), nothing else.
    repo.journal.unlink(missing_ok=True)
    return Restored(tuple(p for p, _, _ in writes), tuple(deletes), resumed)


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
