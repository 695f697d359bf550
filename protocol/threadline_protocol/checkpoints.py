"""Params and results of the methods that bring a session's files along: the diff of a
stretch of the session, rewind and unrewind (``docs/checkpoints.md``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import StrictWireModel, WireModel


class DiffParams(StrictWireModel):
    """``session/diff``: from just before ``fromMessageId`` (default: the last prompt)
    to just after ``toMessageId`` (default: now)."""

    session_id: str = Field(min_length=1)
    from_message_id: str | None = None
    to_message_id: str | None = None


class FileDiff(WireModel):
    """One changed file. ``path`` is relative to the session's cwd when inside it."""

    path: str
    status: Literal["added", "modified", "deleted", "renamed"]
    old_path: str | None = None
    """A renamed file's former path."""
    binary: bool = False
    """A binary file: counts are 0 and no ``diff``."""
    additions: int = 0
    deletions: int = 0
    diff: str | None = None
    """The unified diff (git's format); absent for a binary file or past the size
    limit on what is returned inline (then ``truncated``)."""
    truncated: bool = False


class DiffResult(WireModel):
    files: list[FileDiff]
    from_message_id: str | None = None
    to_message_id: str | None = None
    notice: str | None = None
    """Why the answer may be empty or incomplete (checkpoints off, a workspace over
    the file-count limit)."""


class RestoredFiles(WireModel):
    """What a restore wrote (or created) and deleted."""

    written: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)


class RewindParams(StrictWireModel):
    """``session/rewind``: the session ends just before the prompt ``beforeMessageId``."""

    session_id: str = Field(min_length=1)
    before_message_id: str = Field(min_length=1)
    restore_files: bool = False
    """Bring the workspace back to where it was before that prompt."""
    force: bool = False
    """Restore over files changed since the last checkpoint (checkpointed first)."""


class RewindResult(WireModel):
    rewind_id: str
    """The fork that holds the cut turns: ``session/unrewind`` takes it until the next
    prompt; after that it stays a session of its own."""
    message_count: int
    files: RestoredFiles


class UnrewindParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    rewind_id: str = Field(min_length=1)
    restore_files: bool = True
    force: bool = False


class UnrewindResult(WireModel):
    message_count: int
    files: RestoredFiles


class WorkspaceChangedData(WireModel):
    """``data`` of error -32015: the files a restore would overwrite."""

    files: list[str]


class CheckpointUnavailableData(WireModel):
    """``data`` of error -32016."""

    reason: Literal["off", "other_host", "missing"]
    host: str | None = None
    root: str | None = None
