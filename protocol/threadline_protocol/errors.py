"""Error codes of the wire contract and the ``data`` shapes that go with them."""

from __future__ import annotations

from enum import IntEnum
from typing import Literal

from .base import WireModel


class ErrorCode(IntEnum):
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    REQUEST_CANCELLED = -32800
    SESSION_NOT_FOUND = -32002
    SESSION_BUSY = -32010
    PROVIDER_FAILED = -32011
    TOOL_LOOP_FAILED = -32012
    CONTEXT_TOO_LARGE = -32013
    STORE_FAILED = -32014
    WORKSPACE_CHANGED = -32015
    """A restore of files refused: files changed since the session's latest checkpoint
    (``data.files``); ``force: true`` restores anyway, after a checkpoint of them."""
    CHECKPOINT_UNAVAILABLE = -32016
    """No checkpoint to restore here: checkpoints are off (no ``git``), the checkpoint
    belongs to another machine (``data.host``), or its files are gone (``data.reason``)."""


ToolLoopReason = Literal[
    "tool_parse_error", "tool_execution_error", "budget_exhausted", "repeated_line_loop"
]


class ProviderErrorData(WireModel):
    reason: str
    status: int | None = None
    retryable: bool = False
    partial_text: str = ""


class ToolLoopErrorData(WireModel):
    reason: ToolLoopReason
    detail: str = ""
    partial_text: str = ""
