"""Checkpoints of a workspace: snapshots of its files in a shadow git repository.

A layer below the engine (it imports nothing of Threadline's but the foundation): the
engine records a checkpoint's tree id in a session's event log and asks this package
to snapshot a workspace, diff two trees and restore one. Everything lives in the data
folder (``THREADLINE_HOME/checkpoints/<workspace hash>/``); the user's ``.git``, index,
stash and refs are never read for writing nor written. See ``docs/checkpoints.md``.
"""

from .git import CheckpointError, GitUnavailable, git_binary, unavailable
from .shadow import (
    EMPTY_TREE,
    FileChange,
    Limits,
    ShadowRepo,
    Snapshot,
    TooManyFiles,
)

__all__ = [
    "EMPTY_TREE",
    "CheckpointError",
    "FileChange",
    "GitUnavailable",
    "Limits",
    "ShadowRepo",
    "Snapshot",
    "TooManyFiles",
    "git_binary",
    "unavailable",
]
