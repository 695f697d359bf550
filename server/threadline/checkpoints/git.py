"""Running the ``git`` binary against a shadow repository, never the user's.

Every command gets an environment built here and nothing inherited from ours that
could point it elsewhere: ``GIT_DIR`` is the shadow repository in the data folder,
``GIT_INDEX_FILE`` its own index, ``GIT_WORK_TREE`` the workspace; every other ``GIT_*``
variable of the caller is dropped (a sidecar started from a git hook inherits
``GIT_DIR``), system and global configuration are not read (hooks, fsmonitor, filters
of the user's setup must not run on our behalf), and pathspecs are literal.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path


class GitUnavailable(Exception):
    """No ``git`` binary: checkpoints are off (said once, never an error per call)."""


@cache
def git_binary() -> str | None:
    """The ``git`` on ``PATH``, looked up once per process."""
    return shutil.which("git")


def unavailable() -> str | None:
    """Why checkpoints of files cannot be taken on this machine, or None: one sentence
    said by the sidecar's log, ``threadline models`` and each session's set-up."""
    if git_binary() is None:
        return "git was not found on PATH: checkpoints of files are off"
    return None


class CheckpointError(Exception):
    """A snapshot, diff or restore could not be done; the message says why."""


class GitFailed(CheckpointError):
    """A git command exited with an error; the message carries its stderr."""


class Git:
    """One shadow repository's git, bound to a work tree and an index."""

    def __init__(self, git_dir: Path, work_tree: Path, index: Path) -> None:
        binary = git_binary()
        if binary is None:
            raise GitUnavailable("git was not found on PATH")
        self.binary = binary
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.index = index

    def env(self, *, work_tree: Path | None = None, index: Path | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(
            GIT_DIR=str(self.git_dir),
            GIT_WORK_TREE=str(work_tree or self.work_tree),
            GIT_INDEX_FILE=str(index or self.index),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_LITERAL_PATHSPECS="1",
            GIT_TERMINAL_PROMPT="0",
            GIT_OPTIONAL_LOCKS="0",
            LC_ALL="C",
        )
        return env

    def run(
        self,
        args: Sequence[str],
        *,
        stdin: bytes | None = None,
        ok: Sequence[int] = (0,),
        env: Mapping[str, str] | None = None,
    ) -> bytes:
        """Run ``git args…`` in the work tree; its stdout, or `GitFailed`."""
        done = subprocess.run(
            [self.binary, *args],
            input=stdin,
            capture_output=True,
            cwd=self.work_tree,
            env=dict(env) if env is not None else self.env(),
            check=False,
        )
        if done.returncode not in ok:
            err = done.stderr.decode(errors="replace").strip()
            raise GitFailed(f"git {args[0]} failed ({done.returncode}): {err}")
        return done.stdout

    def start(self, args: Sequence[str], *, env: Mapping[str, str] | None = None) -> Running:
        """Start ``git args…`` without waiting (its stdout is read by `Running.result`)."""
        process = subprocess.Popen(
            [self.binary, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.work_tree,
            env=dict(env) if env is not None else self.env(),
        )
        return Running(args[0], process)

    def objects(self, ids: Sequence[str]) -> list[bytes]:
        """The contents of blobs by id, in order, through one ``cat-file --batch``."""
        if not ids:
            return []
        out = self.run(["cat-file", "--batch"], stdin=b"".join(i.encode() + b"\n" for i in ids))
        contents: list[bytes] = []
        pos = 0
        for _ in ids:
            end = out.index(b"\n", pos)
            header = out[pos:end].split(b" ")
            if len(header) != 3:
                raise GitFailed(f"object {header[0].decode(errors='replace')} is missing")
            size = int(header[2])
            contents.append(out[end + 1 : end + 1 + size])
            pos = end + 1 + size + 1
        return contents


class Running:
    """A git command running beside another one (a snapshot's two)."""

    def __init__(self, name: str, process: subprocess.Popen[bytes]) -> None:
        self.name = name
        self.process = process

    def result(self, ok: Sequence[int] = (0,)) -> bytes:
        """Its stdout once it exits, or `GitFailed`."""
        out, err = self.process.communicate()
        if self.process.returncode not in ok:
            text = err.decode(errors="replace").strip()
            raise GitFailed(f"git {self.name} failed ({self.process.returncode}): {text}")
        return out

    def stop(self) -> None:
        """Kill it and wait for it (its work is to be undone by the caller)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()
