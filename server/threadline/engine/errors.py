"""Errors the engine raises; the RPC layer maps each to its wire code unchanged."""

from __future__ import annotations

from typing import Any

from threadline_protocol.errors import ErrorCode

from ..store.base import StoreError


class EngineError(Exception):
    code: ErrorCode = ErrorCode.INTERNAL_ERROR

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class SessionNotFound(EngineError):
    code = ErrorCode.SESSION_NOT_FOUND

    def __init__(self, session_id: str) -> None:
        super().__init__(f"unknown session: {session_id}", {"sessionId": session_id})


class SessionBusy(EngineError):
    code = ErrorCode.SESSION_BUSY


class InvalidParams(EngineError):
    code = ErrorCode.INVALID_PARAMS


class ProviderFailed(EngineError):
    code = ErrorCode.PROVIDER_FAILED


class ToolLoopFailed(EngineError):
    code = ErrorCode.TOOL_LOOP_FAILED


class ContextTooLarge(EngineError):
    code = ErrorCode.CONTEXT_TOO_LARGE


class StoreFailed(EngineError):
    code = ErrorCode.STORE_FAILED


class WorkspaceChanged(EngineError):
    code = ErrorCode.WORKSPACE_CHANGED


class CheckpointUnavailable(EngineError):
    code = ErrorCode.CHECKPOINT_UNAVAILABLE


def as_engine_error(exc: BaseException) -> EngineError | None:
    """The engine error an exception stands for, if any: a task group's lone exception
    is unwrapped, and a store failure (a full disk, a lost log) gets its own code and
    says where, rather than surfacing as an internal error."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, EngineError):
        return exc
    if isinstance(exc, StoreError):
        return StoreFailed(str(exc), {"reason": exc.reason, "where": exc.where})
    return None
