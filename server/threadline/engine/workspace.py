"""A process's checkpoints of its sessions' workspaces, and where a session's files
stood at a point of its transcript.

`Workspaces` is the process's one door to ``threadline.checkpoints``: the shadow
repository of each workspace folder (a restore a killed process left is finished the
first time its folder is used), this machine's name (a checkpoint is local to the
machine whose data folder holds it), and whether checkpoints are on at all (no
``git``: off, said once, never an error per call). Git runs in worker threads, so a
checkpoint never holds up the event loop (the streaming of other sessions).

A session's marks (``Transcript.marks``) say where each checkpoint was taken; the
files at a point of the transcript are read off them here (`files_before`,
`files_after`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import anyio.to_thread

from ..checkpoints import CheckpointError, ShadowRepo, unavailable
from ..checkpoints.restore import resume, resume_all
from ..store.owners import hostname
from .mutations import Mark

log = logging.getLogger(__name__)

Trees = tuple[tuple[str, str], ...]
"""(workspace root, tree id) for each root of a session."""


class Workspaces:
    def __init__(self, data_dir: Path | None) -> None:
        self.data_dir = data_dir
        self.host = hostname()
        """This machine, as leases name it (``THREADLINE_HOST`` overrides)."""
        self.off_reason: str | None = None
        """Why checkpoints are off in this process, or None when they are on."""
        if data_dir is None:
            self.off_reason = "this process keeps no checkpoints"
        else:
            self.off_reason = unavailable()
            if self.off_reason is not None:
                log.warning(self.off_reason)
        self._repos: dict[str, ShadowRepo] = {}
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.off_reason is None

    def repo(self, root: str) -> ShadowRepo:
        """The shadow repository of a workspace folder; a restore cut short there is
        finished first. Called in worker threads."""
        assert self.data_dir is not None
        with self._lock:
            repo = self._repos.get(root)
            if repo is not None:
                return repo
            repo = ShadowRepo.for_root(self.data_dir, root)
            self._repos[root] = repo
        resume(repo)
        return repo

    def recover(self) -> int:
        """At start: finish every restore a killed process left; returns how many."""
        if not self.enabled or self.data_dir is None:
            return 0
        return len(resume_all(self.data_dir))

    def snapshot_now(self, roots: Sequence[str]) -> Trees:
        """Each root's tree now (blocking: run it in a worker thread)."""
        return tuple((root, self.repo(root).snapshot().tree) for root in roots)

    async def snapshot(self, roots: Sequence[str]) -> Trees:
        return await anyio.to_thread.run_sync(self.snapshot_now, roots)


def session_roots(cwd: str, extra: Sequence[str]) -> list[str]:
    """The folders a session's checkpoints cover: its cwd and extra roots that exist."""
    roots = [os.path.realpath(r) for r in [cwd, *extra] if os.path.isabs(r)]
    return [r for r in dict.fromkeys(roots) if os.path.isdir(r)]


def files_before(marks: Sequence[Mark], position: int) -> Mark | None:
    """The files as they were when the transcript had ``position`` messages, seen from
    later: the first checkpoint taken at or after it (a turn's first checkpoint is
    taken before its first change). None: nothing was checkpointed since, so the
    files are as the latest checkpoint left them."""
    return next((m for m in marks if m.position >= position), None)


def files_after(marks: Sequence[Mark], position: int) -> Mark | None:
    """The files as the messages before ``position`` left them: the last checkpoint
    taken at or before it."""
    found = None
    for m in marks:
        if m.position > position:
            break
        found = m
    return found


__all__ = ["CheckpointError", "Trees", "Workspaces", "files_after", "files_before", "session_roots"]
