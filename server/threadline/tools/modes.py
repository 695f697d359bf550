"""Session modes: what the model is offered and what each call may do without asking.

ACP's session modes, enforced here rather than left to the model:

* ``ask``: read-only tools only (reading, listing, searching, memory, client tools that
  need no approval); no edits, no commands offered;
* ``plan``: the same plus ``update_plan``; the system prompt asks for a plan;
* ``code`` (the default): every tool; edits and commands ask first;
* ``auto``: every tool; edits inside the workspace are applied without asking (the
  file tools cannot reach outside it), commands run unasked only inside the sandbox
  (``commands/confine.py``), and ask where there is none.

Kept approvals (``approvals.py``) apply in every mode, but never to a tool the mode
does not offer. The engine asks :func:`decide` before every call: a call to a tool the
mode forbids is refused, never run, whatever the model was offered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .approvals import Approvals
from .base import Tool

DEFAULT_MODE = "code"


@dataclass(frozen=True, slots=True)
class ModeInfo:
    id: str
    name: str
    description: str


MODES: dict[str, ModeInfo] = {
    m.id: m
    for m in (
        ModeInfo("ask", "Ask", "Answers and reads the workspace; no edits, no commands."),
        ModeInfo("plan", "Plan", "Reads the workspace and writes a plan; changes nothing."),
        ModeInfo("code", "Code", "Edits files and runs commands, asking before each."),
        ModeInfo(
            "auto",
            "Auto",
            "Edits the workspace without asking; runs commands unasked only in a sandbox.",
        ),
    )
}

PLAN_PROMPT = (
    "You are in plan mode: do not change files or run commands. Investigate with the "
    "read-only tools, then write the steps of your plan with update_plan."
)
"""Added to the system prompt in ``plan`` mode."""

READ_ONLY_KINDS = frozenset({"read", "search", "fetch", "think"})
WORKSPACE_EDITORS = frozenset({"edit_file", "write_file"})
"""Built-in tools whose every path is confined to the workspace roots."""


def offers(mode: str, tool: Tool) -> bool:
    """Whether ``mode`` lets the model see and call ``tool``."""
    if mode not in ("ask", "plan"):
        return True
    if tool.name == "update_plan":
        return mode == "plan"
    if tool.kind in READ_ONLY_KINDS:
        return True
    # A client's or MCP server's tool that needs no approval is one its owner calls safe.
    return tool.kind == "other" and not tool.needs_permission


Action = Literal["run", "ask", "refuse", "confined"]


@dataclass(frozen=True, slots=True)
class Decision:
    """``run``: without asking; ``ask``: the user decides; ``refuse``: never run
    (``reason`` is what the model reads); ``confined``: run unasked in the sandbox."""

    action: Action
    reason: str = ""


def decide(
    mode: str,
    tool: Tool,
    arguments: dict[str, Any],
    approvals: Approvals,
    *,
    sandbox: bool,
) -> Decision:
    """What a call may do, before it runs."""
    if not offers(mode, tool):
        return Decision(
            "refuse",
            f"{tool.name} is not available in {mode} mode (the user chose it: "
            f"{MODES[mode].description}). Do not retry it; answer with what you have.",
        )
    rule = approvals.match(tool.name, arguments)
    if rule is not None:
        if rule["allow"]:
            return Decision("run")
        return Decision(
            "refuse", "The user always refuses this call. Do not retry it; continue without it."
        )
    if not tool.needs_permission:
        return Decision("run")
    if mode == "auto":
        if tool.name in WORKSPACE_EDITORS:
            return Decision("run")
        if tool.name == "run_command" and sandbox:
            return Decision("confined")
    return Decision("ask")
