"""Typed engine values made into wire results (protocol models): the one place the
engine's outcomes become the answers `Engine` returns."""

from __future__ import annotations

from typing import Any

from threadline_protocol import methods as pm
from threadline_protocol.meta import CompactResultInfo, PromptResultInfo, QueuedPrompt, ToolOffer

from ..providers.registry import ProviderRegistry
from ..store.base import PendingPrompt, SessionRow
from . import modes as session_modes
from . import options
from .config import SessionConfig
from .feed import STATES
from .outcomes import (
    CompactionOutcome,
    DiffOutcome,
    Forked,
    Interrupted,
    NotRun,
    PromptOutcome,
    RestoredFiles,
    Rewound,
    TurnOutcome,
)


def fork_result(
    providers: ProviderRegistry,
    config: SessionConfig,
    forked: Forked,
    files: RestoredFiles | None,
) -> pm.ForkResult:
    result = pm.ForkResult(
        session_id=forked.session_id,
        parent_session_id=forked.parent_session_id,
        forked_at_message_id=forked.forked_at_message_id,
        modes=session_modes.mode_state(config.mode),
        config_options=options.config_options(providers, config),
    )
    if files is not None:
        result.files = pm.RestoredFiles(written=list(files.written), deleted=list(files.deleted))
    return result


def child_of(config: dict[str, Any]) -> str | None:
    """The parent of a child session started ``fresh`` (a fork names its own)."""
    child = config.get("child")
    return str(child["parentSessionId"]) if isinstance(child, dict) else None


def queued(prompt: PendingPrompt) -> QueuedPrompt:
    return QueuedPrompt.model_validate(
        {
            "id": prompt.id,
            "mode": prompt.mode,
            "state": STATES.get(prompt.state, prompt.state),
            "prompt": prompt.prompt,
            "createdAt": prompt.created_at,
        }
    )


def prompt_result(outcome: PromptOutcome | NotRun) -> pm.PromptResult:
    if isinstance(outcome, NotRun):
        return pm.PromptResult(
            stop_reason="cancelled",
            meta=pm.PromptResultMeta(threadline=PromptResultInfo(queue=outcome.why)),  # type: ignore[arg-type]
        )
    if not isinstance(outcome, TurnOutcome):
        return pm.PromptResult(
            stop_reason="end_turn",
            meta=pm.PromptResultMeta(threadline=PromptResultInfo(command=outcome.command)),
        )
    return pm.PromptResult(
        stop_reason=outcome.stop_reason,  # type: ignore[arg-type]
        usage=pm.Usage.model_validate(outcome.usage.wire()),
        meta=pm.PromptResultMeta(
            threadline=PromptResultInfo(
                turn_id=outcome.turn_id,
                message_id=outcome.message_id,
                tool_offers=[ToolOffer.model_validate(o) for o in outcome.tool_offers],
                user_message_id=outcome.user_message_id,
            )
        ),
    )


def listed(r: SessionRow) -> pm.SessionInfo:
    info = pm.SessionInfo(
        session_id=r.id,
        cwd=r.cwd,
        title=r.title,
        updated_at=r.updated_at,
        meta=pm.SessionInfoMeta(
            parent_session_id=r.parent_id or child_of(r.config),
            kind="child" if r.config.get("child") else "session",
            forked_at_message_id=r.forked_at_message_id,
            message_count=r.message_count,
            model=r.config.get("model"),
            preview=r.preview,
            archived=r.archived,
            tags=list(r.tags),
        ),
    )
    if roots := r.config.get("roots"):
        info.additional_directories = list(roots)
    return info


def files_result(rewound: Rewound) -> pm.RestoredFiles:
    files = rewound.files or RestoredFiles()
    return pm.RestoredFiles(written=list(files.written), deleted=list(files.deleted))


def diff_result(got: DiffOutcome) -> pm.DiffResult:
    return pm.DiffResult(
        files=[
            pm.FileDiff(
                path=f.path,
                status=f.status,  # type: ignore[arg-type]
                old_path=f.old_path,
                binary=f.binary,
                additions=f.additions,
                deletions=f.deletions,
                diff=f.diff,
                truncated=f.truncated,
            )
            for f in got.files
        ],
        from_message_id=got.from_message_id,
        to_message_id=got.to_message_id,
        notice=got.notice,
    )


def compact_result(outcome: CompactionOutcome) -> pm.CompactResult:
    info = (
        CompactResultInfo(compacted=True)
        if outcome.compacted
        else CompactResultInfo(compacted=False, reason=outcome.reason)
    )
    return pm.CompactResult(
        summary=outcome.summary,
        tokens_before=outcome.tokens_before,
        tokens_after=outcome.tokens_after,
        messages_before=outcome.messages_before,
        messages_after=outcome.messages_after,
        meta=pm.CompactResultMeta(threadline=info),
    )


def interrupt_result(outcome: Interrupted) -> pm.InterruptResult:
    if not outcome.interrupted:
        return pm.InterruptResult(interrupted=False)
    return pm.InterruptResult(interrupted=True, turn_id=outcome.turn_id)
