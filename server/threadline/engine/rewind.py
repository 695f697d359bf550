"""Files follow the session: the diff of any stretch of it, a rewind (and its undoing)
that brings the files back too, and a fork's files.

A session's checkpoints are marks in its transcript (``engine/workspace.py``); every
operation here reads the files at a point off them and asks the shadow repository
for a diff or a restore, in a worker thread. A restore never clobbers the user: the
workspace is compared with the session's latest checkpoint first, and files changed
since by anyone else that the restore would touch refuse it (`WorkspaceChanged`),
unless forced, and then the workspace as found is checkpointed first so it can be
brought back too. Rewinds and restores hold the session's lease (`Work.REWIND`).
A rewind cuts nothing from the log: the cut turns stay in a fork made at the
session's end (its id is the rewind's id), which ``session/unrewind`` folds back in
until the next message; after that they stay reachable as that fork.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio.to_thread

from ..checkpoints import EMPTY_TREE, CheckpointError
from ..checkpoints.restore import materialize, restore
from .errors import CheckpointUnavailable, InvalidParams, WorkspaceChanged
from .forking import fork
from .live import LiveSessions
from .mutations import Mark, Msg, TranscriptReset, WorkspaceCheckpoint
from .outcomes import ChangedFile, DiffOutcome, Forked, RestoredFiles, Rewound
from .session import Session
from .tasks import Work
from .transcript import Transcript
from .workspace import Trees, files_after, files_before

T = TypeVar("T")


class Files:
    def __init__(self, live: LiveSessions) -> None:
        self.live = live
        self.ws = live.workspaces

    # -- diff ------------------------------------------------------------------------------

    async def diff(self, session_id: str, start_id: str | None, end_id: str | None) -> DiffOutcome:
        """What changed in the files from just before ``start_id`` (default: the last
        prompt) to just after ``end_id`` (default: now)."""
        session = self.live.open(session_id)
        t = session.transcript
        if start_id is not None:
            start = _position(t, start_id)
        else:
            start = next((i for i in range(len(t) - 1, -1, -1) if _is_prompt(t, i)), 0)
            start_id = t.messages[start]["messageId"] if len(t) else None
        end = len(t) if end_id is None else _position(t, end_id) + 1
        notice = self.ws.off_reason or session.checkpoint_notice
        a, b = files_before(t.marks, start), files_after(t.marks, end)
        if a is None or b is None or b.position < a.position:
            return DiffOutcome([], start_id, end_id, notice)
        self._here(a)
        self._here(b)
        before = dict(a.trees)

        def work() -> list[ChangedFile]:
            out: list[ChangedFile] = []
            for root, tree in b.trees:
                for c in self.ws.repo(root).diff(before.get(root, EMPTY_TREE), tree):
                    out.append(
                        ChangedFile(
                            root,
                            c.path,
                            c.status,
                            c.old_path,
                            c.binary,
                            c.additions,
                            c.deletions,
                            c.diff,
                            c.truncated,
                        )
                    )
            return out

        return DiffOutcome(await _off_loop(work), start_id, end_id, notice)

    # -- rewind ----------------------------------------------------------------------------

    async def rewind(
        self, session_id: str, before_id: str, *, restore_files: bool, force: bool
    ) -> Rewound:
        """End the session just before the prompt ``before_id``; with ``restore_files``
        the files go back to where they were then."""
        session = self.live.open(session_id)
        t = session.transcript
        keep = _position(t, before_id)
        if not _is_prompt(t, keep):
            raise InvalidParams(
                f"{before_id} is not a prompt: a session is rewound to before a user message",
                {"messageId": before_id},
            )
        with self.live.leased(session, Work.REWIND):
            prefix = self._fold_before(session, before_id)
            target = files_before(t.marks, keep) if restore_files else None
            if restore_files:
                self._check_on()
            latest = t.marks[-1] if t.marks else None
            paths = None if target is None else await self._plan(session, latest, target, force)
            cut = fork(self.live, session.id, None, None)
            self.live.store.update_session(cut.session_id, title=_cut_title(session))
            marks = list(prefix.marks)
            if target is not None:
                marks.append(Mark(keep, target.trees, self.ws.host, "restore"))
            elif latest is not None and (not marks or marks[-1].trees != latest.trees):
                # The files stay as the cut turns left them: the next restore compares
                # the workspace with that, not with an older checkpoint.
                marks.append(Mark(keep, latest.trees, latest.host, "rewind"))
            # The cut first, then the files: a process killed in between leaves a
            # restore journal that the next start finishes, so the two agree.
            session.commit([_reset(prefix, keep, (), tuple(marks), cut.session_id)])
            files = None
            if target is not None and paths is not None:
                files = await self._restore(session, target, paths)
        return Rewound(cut.session_id, len(session.transcript), files or RestoredFiles())

    async def unrewind(
        self, session_id: str, rewind_id: str, *, restore_files: bool, force: bool
    ) -> Rewound:
        """Undo the session's last rewind (only until its next message): the cut turns
        come back, and with ``restore_files`` the files as they were before it."""
        session = self.live.open(session_id)
        with self.live.leased(session, Work.REWIND):
            t = session.transcript
            if t.rewound is None or t.rewound != rewind_id:
                raise InvalidParams(
                    f"session {session.id} cannot undo rewind {rewind_id} now: it was not "
                    "the last rewind, or a message came after it (the cut turns are in "
                    f"session {rewind_id})",
                    {"rewindId": rewind_id},
                )
            store = self.live.store
            cut = Transcript.from_events((e.kind, e.payload) for e in store.load_events(rewind_id))
            keep = len(t)
            if [m["messageId"] for m in cut.messages[:keep]] != [
                m["messageId"] for m in t.messages
            ]:
                raise InvalidParams(f"{rewind_id} is not this session's rewind", {})
            target = cut.marks[-1] if cut.marks else None
            paths = None
            if restore_files and target is not None:
                self._check_on()
                latest = t.marks[-1] if t.marks else None
                paths = await self._plan(session, latest, target, force)
            session.commit([_reset(cut, keep, tuple(cut.messages[keep:]), tuple(cut.marks), None)])
            files = None
            if target is not None and paths is not None:
                files = await self._restore(session, target, paths)
        held = store.delete_session(rewind_id, self.live.owner, time.time())
        del held  # a fork someone opened meanwhile stays: it is theirs now
        return Rewound(None, len(session.transcript), files or RestoredFiles())

    # -- a fork's files --------------------------------------------------------------------

    async def fork_files(
        self, forked: Forked, *, restore_files: bool, materialize_files: bool, force: bool
    ) -> RestoredFiles:
        """The files of a new fork: the workspace brought back to the fork point
        (``restore_files``), or written into the fork's own new folder."""
        parent = self.live.open(forked.parent_session_id)
        child = self.live.open(forked.session_id)
        self._check_on()
        target = files_before(parent.transcript.marks, len(child.transcript))
        try:
            if materialize_files:
                return await self._materialize(parent, child, target)
            if target is None:
                return RestoredFiles()
            parent.check_idle("restore its files")
            self.live.leases.check_free(parent.id)
            with self.live.leased(child, Work.REWIND):
                latest = parent.transcript.marks[-1] if parent.transcript.marks else None
                paths = await self._plan(child, latest, target, force)
                return await self._restore(child, target, paths)
        except BaseException:
            await self.live.delete(child.id)
            raise

    async def _materialize(
        self, parent: Session, child: Session, target: Mark | None
    ) -> RestoredFiles:
        src = parent.roots[0] if parent.roots else None
        if src is None:
            raise CheckpointUnavailable(f"{parent.cwd} is not a folder", {"reason": "missing"})
        dest = Path(child.cwd)
        if target is not None:
            self._here(target)
        tree = dict(target.trees).get(src) if target is not None else None

        def work() -> list[str]:
            if os.path.realpath(dest) == src:
                raise InvalidParams("materializeFiles needs a cwd other than the parent's", {})
            chosen = tree or self.ws.repo(src).snapshot().tree
            return materialize(self.ws.repo(src), chosen, dest)

        written = await _off_loop(work)
        with self.live.leased(child, Work.REWIND):
            await child.checkpoint("restore")
        return RestoredFiles(tuple(written))

    # -- restoring, without clobbering -----------------------------------------------------

    async def _plan(
        self, session: Session, latest: Mark | None, target: Mark, force: bool
    ) -> dict[str, set[str]]:
        """Which files to bring back, by root: those the session changed between
        ``target`` and its ``latest`` checkpoint. Refused (`WorkspaceChanged`) when
        someone else changed one of them since ``latest``; forced, the workspace as
        found is checkpointed first, so it too can be brought back."""
        self._here(target)
        if latest is None:
            return {}
        self._here(latest)
        roots = [r for r, _ in target.trees if r in session.roots]
        base = dict(latest.trees)
        goal = dict(target.trees)

        def work() -> tuple[Trees, dict[str, set[str]], list[str]]:
            now = self.ws.snapshot_now(roots)
            paths: dict[str, set[str]] = {}
            theirs: list[str] = []
            for root, tree in now:
                repo = self.ws.repo(root)
                if root not in base:
                    continue
                if not repo.has_tree(goal[root]):
                    raise CheckpointUnavailable(
                        f"the checkpoint of {root} is not in this machine's data folder",
                        {"reason": "missing", "root": root},
                    )
                ours = repo.changed(goal[root], base[root])
                paths[root] = ours
                if base[root] != tree:
                    clash = ours & repo.changed(base[root], tree)
                    theirs += [_shown(session, root, p) for p in sorted(clash)]
            return now, paths, theirs

        now, paths, theirs = await _off_loop(work)
        if theirs and not force:
            raise WorkspaceChanged(
                f"{len(theirs)} file(s) changed since the session's last checkpoint would be "
                "overwritten: " + ", ".join(theirs[:10]) + " (force: true restores anyway)",
                {"files": theirs},
            )
        if theirs:
            session.commit([WorkspaceCheckpoint(now, self.ws.host, "forced")])
        return paths

    async def _restore(
        self, session: Session, target: Mark, paths: dict[str, set[str]]
    ) -> RestoredFiles:
        """Bring ``paths`` back to ``target``, then checkpoint the workspace as it is
        (files nobody changed are as they were, not as in ``target``): a restored
        root's tree comes with its restore (the snapshot `_plan` just took, told of
        the files written), only a root not restored is snapshotted again."""

        def work() -> tuple[RestoredFiles, Trees]:
            written: list[str] = []
            deleted: list[str] = []
            trees: dict[str, str] = {}
            for root, tree in target.trees:
                if root not in paths:
                    continue  # another folder's checkpoint (a fork's parent's): not ours
                done = restore(self.ws.repo(root), tree, paths[root])
                written += [_shown(session, root, p) for p in done.written]
                deleted += [_shown(session, root, p) for p in done.deleted]
                if done.tree is not None:
                    trees[root] = done.tree
            rest = dict(self.ws.snapshot_now([r for r in session.roots if r not in trees]))
            after = tuple((r, trees.get(r) or rest[r]) for r in session.roots)
            return RestoredFiles(tuple(written), tuple(deleted)), after

        files, after = await _off_loop(work)
        marks = session.transcript.marks
        if not marks or marks[-1].trees != after:
            session.commit([WorkspaceCheckpoint(after, self.ws.host, "restore")])
        return files

    def _check_on(self) -> None:
        if not self.ws.enabled:
            raise CheckpointUnavailable(
                self.ws.off_reason or "checkpoints are off", {"reason": "off"}
            )

    def _here(self, mark: Mark) -> None:
        """A checkpoint lives in the data folder of the machine that took it."""
        if mark.host != self.ws.host:
            raise CheckpointUnavailable(
                f"this checkpoint was taken on {mark.host}; restore it there "
                f"(this is {self.ws.host})",
                {"reason": "other_host", "host": mark.host},
            )

    def _fold_before(self, session: Session, message_id: str) -> Transcript:
        """The transcript as it was just before ``message_id`` was added (its state:
        experiences, compaction, checkpoints), folded from the log."""
        store = self.live.store
        where = store.locate_message(session.id, message_id)
        if where is None:
            raise InvalidParams(f"message {message_id} is not in session {session.id}", {})
        origin, seq, _ = where
        events = itertools.takewhile(
            lambda e: not (e.session_id == origin and e.seq == seq), store.load_events(session.id)
        )
        prefix = Transcript.from_events((e.kind, e.payload) for e in events)
        if len(prefix) != session.transcript.index[message_id]:
            raise CheckpointError(f"the log of {session.id} does not fold to its transcript")
        return prefix


def _reset(
    state: Transcript,
    keep: int,
    messages: tuple[Msg, ...],
    marks: tuple[Mark, ...],
    rewind_id: str | None,
) -> TranscriptReset:
    """The reset to ``state``'s experiences and compaction, keeping ``keep`` messages."""
    cp = state.checkpoint
    return TranscriptReset(
        keep=keep,
        messages=messages,
        experiences=dict(state.experiences),
        working_start=state.working_start,
        compaction=None
        if cp is None
        else (cp.summary_index, cp.up_to_index, tuple(sorted(cp.keep_ids))),
        marks=marks,
        rewind_id=rewind_id,
    )


def _position(t: Transcript, message_id: str) -> int:
    at = t.index.get(message_id)
    if at is None:
        raise InvalidParams(
            f"message {message_id} is not in this session", {"messageId": message_id}
        )
    return at


def _is_prompt(t: Transcript, i: int) -> bool:
    return t.messages[i]["role"] == "user"


def _shown(session: Session, root: str, path: str) -> str:
    """A path as a client shows it: relative to the session's folder when inside it."""
    full = os.path.join(root, path)
    base = os.path.realpath(session.cwd)
    return os.path.relpath(full, base) if full.startswith(base + os.sep) else full


def _cut_title(session: Session) -> str:
    return f"{session.title or f'session {session.id}'} · rewound"


async def _off_loop(work: Callable[[], T]) -> T:
    """Git runs in a worker thread: the event loop keeps streaming other sessions."""
    return await anyio.to_thread.run_sync(work)
