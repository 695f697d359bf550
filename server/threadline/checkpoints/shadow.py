"""A workspace's shadow repository: snapshots as tree ids, and the diff of two trees.

One repository per workspace folder, in ``<data folder>/checkpoints/<hash of the
folder>/``: ``repo/`` (objects only: no refs, no commits, no hooks) and ``index`` (its
own). A snapshot is ``git add -A`` into that index and ``git write-tree``: the tree id
names the workspace's state, and only files whose size or time changed are read
again, so a checkpoint of a large workspace with a few changes costs little more than
git's own stat of every file. What ``.gitignore`` files, the user's
``.git/info/exclude`` and git's global excludes leave out is left out here too; files
over the size limit are left out (named in the snapshot), and a workspace over the
file-count limit is not snapshotted at all (`TooManyFiles`) rather than walked for
minutes. Restoring a tree is `restore.py`'s.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import struct
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from .git import CheckpointError, Git, GitFailed

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""git's id of the tree with nothing in it: the state before any checkpoint."""


class TooManyFiles(CheckpointError):
    """The workspace has more files than a checkpoint takes."""


@dataclass(frozen=True, slots=True)
class Limits:
    max_files: int = 50_000
    """A workspace with more files (not ignored) is not snapshotted."""
    max_file_bytes: int = 10 << 20
    """A larger file is left out of snapshots (and so never restored)."""
    inline_diff_bytes: int = 256 << 10
    """How much unified diff `ShadowRepo.diff` returns in all; files past it get none."""

    @classmethod
    def from_env(cls) -> Limits:
        """``THREADLINE_CHECKPOINT_MAX_FILES`` and ``…_MAX_FILE_BYTES`` override."""
        base = cls()
        return cls(
            max_files=int(os.environ.get("THREADLINE_CHECKPOINT_MAX_FILES", base.max_files)),
            max_file_bytes=int(
                os.environ.get("THREADLINE_CHECKPOINT_MAX_FILE_BYTES", base.max_file_bytes)
            ),
            inline_diff_bytes=base.inline_diff_bytes,
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    tree: str
    skipped: tuple[str, ...] = ()
    """Files left out for their size (this snapshot's new ones)."""


@dataclass(slots=True)
class FileChange:
    """One file that differs between two trees."""

    path: str
    status: str
    """``added``, ``modified``, ``deleted`` or ``renamed`` (then ``old_path`` is set)."""
    old_path: str | None = None
    binary: bool = False
    additions: int = 0
    deletions: int = 0
    diff: str | None = None
    """The unified diff; None for a binary file or one past the inline limit."""
    truncated: bool = False
    """The diff was left out for the inline limit."""
    old_mode: str = ""
    new_mode: str = ""


_STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "T": "modified"}


def workspace_key(root: Path) -> str:
    return hashlib.sha256(str(root).encode()).hexdigest()[:24]


@dataclass
class ShadowRepo:
    """The shadow repository of one workspace folder."""

    root: Path
    home: Path
    """``<data folder>/checkpoints/<key>``: everything of this workspace's checkpoints."""
    limits: Limits = field(default_factory=Limits)

    @classmethod
    def for_root(cls, data_dir: Path, root: str, limits: Limits | None = None) -> ShadowRepo:
        real = Path(os.path.realpath(root))
        home = data_dir / "checkpoints" / workspace_key(real)
        repo = cls(real, home, limits or Limits.from_env())
        repo._data_dir = data_dir.resolve()
        return repo

    _data_dir: Path | None = None

    @property
    def git(self) -> Git:
        return Git(self.home / "repo", self.root, self.home / "index")

    @property
    def journal(self) -> Path:
        return self.home / "restore.json"

    # -- set-up and locking -------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Generator[Git]:
        """The repository, created if new, held against other processes (two sidecars
        on one workspace share its index)."""
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.home / "lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                git = self.git
                if not (self.home / "repo" / "objects").is_dir():
                    self._init(git)
                self._refresh_excludes(git)
                yield git
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _init(self, git: Git) -> None:
        env = git.env()
        del env["GIT_WORK_TREE"]  # init refuses a work tree with --bare
        git.run(["init", "-q", "--bare", "--template=", str(self.home / "repo")], env=env)
        for key, value in (
            ("core.autocrlf", "false"),
            ("core.fileMode", "true"),
            ("core.symlinks", "true"),
            ("core.untrackedCache", "true"),
            ("core.fsmonitor", "false"),
            ("core.quotePath", "false"),
            ("gc.auto", "0"),
            ("advice.addEmbeddedRepo", "false"),
            ("advice.addIgnoredFile", "false"),
        ):
            git.run(["config", key, value])
        (self.home / "repo" / "info").mkdir(exist_ok=True)
        (self.home / "root").write_text(str(self.root) + "\n")

    def _refresh_excludes(self, git: Git) -> None:
        """The user's ``.git/info/exclude`` is read where it is (never copied, never
        written); the data folder, if inside the workspace, is always left out."""
        user = self.root / ".git" / "info" / "exclude"
        want = str(user) if user.is_file() else ""
        mark = self.home / "excludes-file"
        have = mark.read_text() if mark.exists() else None
        if have != want:
            if want:
                git.run(["config", "core.excludesFile", want])
            else:
                git.run(["config", "--unset-all", "core.excludesFile"], ok=(0, 5))
            mark.write_text(want)
        exclude = self.home / "repo" / "info" / "exclude"
        if not exclude.exists():
            lines = []
            data = self._data_dir
            if data is not None and data.is_relative_to(self.root) and data != self.root:
                lines.append("/" + _pattern(data.relative_to(self.root).as_posix()) + "/")
            exclude.write_text("".join(line + "\n" for line in lines))

    # -- snapshots --------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The workspace now, as a tree id (`TooManyFiles` over the count limit)."""
        with self.locked() as git:
            return self.snapshot_locked(git)

    def snapshot_locked(self, git: Git) -> Snapshot:
        """`snapshot`, for a caller that holds the lock already (a restore).

        The new files' names (for the limits) are listed while ``git add -A`` runs,
        not before it: a checkpoint costs about what ``add`` and ``write-tree`` cost.
        The listing reads the index as it was (a hard link to it: ``add`` replaces the
        file, never writes into it), and in the rare case the limits are hit the
        ``add`` is stopped and that index put back, as if it never ran."""
        index = self.home / "index"
        before = self.home / "index.before"
        before.unlink(missing_ok=True)
        kept = index.exists()
        if kept:
            try:
                os.link(index, before)
            except OSError:  # a file system without hard links
                shutil.copyfile(index, before)
        try:
            lister = git.start(
                ["ls-files", "-z", "--others", "--exclude-standard"],
                env=git.env(index=before if kept else index),
            )
            # The first snapshot lists before it adds: there is no index to keep yet.
            adder = git.start(["add", "-A", "--ignore-errors"]) if kept else None
            try:
                new = [p for p in lister.result().split(b"\0") if p]
            except BaseException:
                if adder is not None:  # not left running past the lock
                    adder.stop()
                    self._put_back(index, before)
                raise
            total = self._indexed(before) + len(new)
            large = [] if total > self.limits.max_files else self._large(new)
            if total > self.limits.max_files or large:
                if adder is not None:
                    adder.stop()
                    self._put_back(index, before)
            elif adder is None:
                git.run(["add", "-A", "--ignore-errors"], ok=(0, 1))
            else:
                adder.result(ok=(0, 1))
        finally:
            before.unlink(missing_ok=True)
        if total > self.limits.max_files:
            raise TooManyFiles(
                f"{self.root} has more than {self.limits.max_files} files that are not "
                "ignored: checkpoints are off for it (add a .gitignore, or raise "
                "THREADLINE_CHECKPOINT_MAX_FILES)"
            )
        if large:
            with open(self.home / "repo" / "info" / "exclude", "a", encoding="utf-8") as f:
                for path in large:
                    f.write("/" + _pattern(path) + "\n")
            git.run(["add", "-A", "--ignore-errors"], ok=(0, 1))
        tree = git.run(["write-tree"]).decode().strip()
        return Snapshot(tree, tuple(large))

    def _put_back(self, index: Path, before: Path) -> None:
        """The index as it was before a stopped ``add`` (which may have left its lock)."""
        (self.home / "index.lock").unlink(missing_ok=True)
        os.replace(before, index)

    def _indexed(self, index: Path) -> int:
        """Entries in an index, read from its header (no walk)."""
        try:
            with open(index, "rb") as f:
                head = f.read(12)
        except FileNotFoundError:
            return 0
        return struct.unpack(">I", head[8:12])[0] if len(head) == 12 else 0

    def _large(self, new: list[bytes]) -> list[str]:
        out: list[str] = []
        limit = self.limits.max_file_bytes
        for raw in new:
            path = os.fsdecode(raw)
            if "\n" in path:
                continue
            try:
                st = os.lstat(self.root / path)
            except OSError:
                continue
            if st.st_size > limit:
                out.append(path)
        return out

    def has_tree(self, tree: str) -> bool:
        if tree == EMPTY_TREE:
            return True
        with self.locked() as git:
            try:
                kind = git.run(["cat-file", "-t", tree]).decode().strip()
            except GitFailed:
                return False
            return kind == "tree"

    # -- diffs ------------------------------------------------------------------------------

    def changed(self, a: str, b: str) -> set[str]:
        """Every path whose content or mode differs between two trees (no renames)."""
        with self.locked() as git:
            out = git.run(["diff-tree", "-r", "-z", "--no-renames", "--name-only", a, b])
        return {os.fsdecode(p) for p in out.split(b"\0") if p}

    def diff(self, a: str, b: str, *, patches: bool = True) -> list[FileChange]:
        """What changed from tree ``a`` to tree ``b``, file by file (renames found),
        with each file's unified diff until the inline limit is spent."""
        if a == b:
            return []
        with self.locked() as git:
            changes = _raw(git.run(["diff-tree", "-r", "-z", "-M", "--raw", a, b]))
            counts = _numstat(git.run(["diff-tree", "-r", "-z", "-M", "--numstat", a, b]))
            budget = self.limits.inline_diff_bytes
            for change in changes:
                n = counts.get(change.path)
                if n is None:
                    change.binary = True
                else:
                    change.additions, change.deletions = n
                if not patches or change.binary:
                    continue
                if budget <= 0:
                    change.truncated = True
                    continue
                paths = [change.path] if change.old_path is None else [change.old_path, change.path]
                text = git.run(["diff-tree", "-p", "-M", "--no-color", a, b, "--", *paths])
                body = text.decode(errors="replace")
                if len(body) > budget:
                    change.truncated = True
                    budget = 0
                    continue
                change.diff = body
                budget -= len(body)
        return changes


def _raw(out: bytes) -> list[FileChange]:
    """``diff-tree --raw -z``: ``:old new old-id new-id status\\0path\\0[path\\0]``."""
    parts = out.split(b"\0")
    changes: list[FileChange] = []
    i = 0
    while i < len(parts) and parts[i].startswith(b":"):
        meta = parts[i][1:].decode().split(" ")
        letter = meta[4][:1]
        if letter in ("R", "C"):
            old, new = os.fsdecode(parts[i + 1]), os.fsdecode(parts[i + 2])
            i += 3
        else:
            old, new = None, os.fsdecode(parts[i + 1])
            i += 2
        status = _STATUS.get(letter, "modified") if letter != "C" else "added"
        changes.append(
            FileChange(
                path=new,
                status=status,
                old_path=old if letter == "R" else None,
                old_mode=meta[0],
                new_mode=meta[1],
            )
        )
    return changes


def _numstat(out: bytes) -> dict[str, tuple[int, int]]:
    """``diff-tree --numstat -z``: counts by (new) path; binary files have none."""
    counts: dict[str, tuple[int, int]] = {}
    parts = out.split(b"\0")
    i = 0
    while i < len(parts) and parts[i]:
        added, deleted, path = parts[i].split(b"\t", 2)
        if path == b"":  # a rename: old and new paths follow
            path = parts[i + 2]
            i += 3
        else:
            i += 1
        if added != b"-":
            counts[os.fsdecode(path)] = (int(added), int(deleted))
    return counts


def _pattern(path: str) -> str:
    """A path as a gitignore pattern that matches it literally."""
    out = "".join("\\" + c if c in "\\*?[" else c for c in path)
    if out[:1] in ("#", "!"):
        out = "\\" + out
    if out.endswith(" "):
        out = out[:-1] + "\\ "
    return out
