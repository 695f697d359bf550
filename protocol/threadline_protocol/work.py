"""What the agent does in the workspace beyond text: the diffs and terminals a tool
call shows, the client's terminals (ACP ``terminal/*``), the plan, session modes and
the approvals a user chose to keep.

ACP's shapes where ACP has one (``diff`` and ``terminal`` tool-call content,
``terminal/*``, ``SessionModeState``, ``session/set_mode``, ``current_mode_update``);
Threadline's own for the lasting approvals (``session/approvals``,
``session/remove_approval``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import StrictWireModel, WireModel, meta_field

# -- tool-call content ----------------------------------------------------------------


class DiffToolCallContent(WireModel):
    """ACP ``diff`` content: a file's whole text before and after (``oldText`` absent
    for a new file). Shown from the call's first ``tool_call``, in its permission
    request and in its result, live and on replay."""

    type: Literal["diff"] = "diff"
    path: str
    old_text: str | None = None
    new_text: str


class TerminalToolCallContent(WireModel):
    """ACP ``terminal`` content: the client shows the terminal ``terminal/create``
    made, live, for as long as it keeps it."""

    type: Literal["terminal"] = "terminal"
    terminal_id: str


# -- the plan -----------------------------------------------------------------------------


class PlanEntry(WireModel):
    """One entry of ACP's ``plan`` update (the whole list is sent each time)."""

    content: str
    priority: Literal["high", "medium", "low"] = "medium"
    status: Literal["pending", "in_progress", "completed"] = "pending"


# -- terminal/* (server → client) -----------------------------------------------------


class CreateTerminalParams(WireModel):
    """ACP ``terminal/create``: run ``command`` with ``args`` in the client's terminal."""

    session_id: str
    command: str
    args: list[str] = Field(default_factory=list)
    cwd: str | None = None
    output_byte_limit: int | None = Field(default=None, ge=0)


class CreateTerminalResult(WireModel):
    terminal_id: str


class TerminalRef(WireModel):
    """Params of ``terminal/output``, ``terminal/wait_for_exit``, ``terminal/kill`` and
    ``terminal/release``."""

    session_id: str
    terminal_id: str


class TerminalExitStatus(WireModel):
    exit_code: int | None = None
    signal: str | None = None


class TerminalOutputResult(WireModel):
    output: str
    truncated: bool
    exit_status: TerminalExitStatus | None = None


class WaitForExitResult(WireModel):
    exit_code: int | None = None
    signal: str | None = None


# -- modes ------------------------------------------------------------------------------

ModeId = Literal["ask", "plan", "code", "auto"]


class SessionMode(WireModel):
    id: str
    name: str
    description: str | None = None


class SessionModeState(WireModel):
    """ACP ``modes`` in session results: the mode the session is in and the choices."""

    current_mode_id: str
    available_modes: list[SessionMode]


class SetModeParams(StrictWireModel):
    """ACP ``session/set_mode``."""

    session_id: str = Field(min_length=1)
    mode_id: str = Field(min_length=1)


class SetModeResult(WireModel):
    meta: dict[str, Any] | None = meta_field()


class CurrentModeUpdate(WireModel):
    """ACP ``current_mode_update``: the session's mode changed (from any client)."""

    session_update: Literal["current_mode_update"] = "current_mode_update"
    current_mode_id: str


# -- approvals that last ----------------------------------------------------------------


class ApprovalRule(WireModel):
    """An "always" answer kept with the session. ``scope``: ``workspace`` (the tool's
    calls on paths inside the session's roots) or ``prefix`` (a ``run_command`` whose
    command starts with ``prefix``, word for word); ``tool`` for every call of the tool
    (tools other than these two)."""

    id: str
    tool: str
    scope: Literal["workspace", "prefix", "tool"]
    prefix: str | None = None
    allow: bool
    created_at: str


class ApprovalsResult(WireModel):
    """``session/approvals`` and ``session/remove_approval``: the rules now kept."""

    rules: list[ApprovalRule]


class RemoveApprovalParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    rule_id: str = Field(min_length=1)
