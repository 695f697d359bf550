"""What a tool is, to the turn loop: a name, a schema, and an async ``run``."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from threadline_protocol import methods as pm
from threadline_protocol import work as pw

from ..providers.base import Usage

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]


class ClientChannel(Protocol):
    """What a tool may ask of the editor, and what the editor said it can do. The
    engine's client link (``engine/link.py``) is one; tools need nothing else of the
    connection. Each call waits for the answer and is withdrawn if cancelled."""

    async def request_permission(
        self, params: pm.RequestPermissionParams
    ) -> pm.RequestPermissionResult: ...

    async def read_text_file(self, params: pm.ReadTextFileParams) -> pm.ReadTextFileResult: ...

    async def write_text_file(self, params: pm.WriteTextFileParams) -> None: ...

    async def call_tool(self, params: pm.ToolCallCall) -> pm.ToolCallCallResult: ...

    async def create_elicitation(
        self, params: pm.CreateElicitationParams
    ) -> pm.CreateElicitationResult: ...

    # ACP terminal/*: only for a client that advertised ``terminal: true``.

    async def create_terminal(self, params: pw.CreateTerminalParams) -> pw.CreateTerminalResult: ...

    async def terminal_output(self, params: pw.TerminalRef) -> pw.TerminalOutputResult: ...

    async def wait_for_terminal_exit(self, params: pw.TerminalRef) -> pw.WaitForExitResult: ...

    async def kill_terminal(self, params: pw.TerminalRef) -> None: ...

    async def release_terminal(self, params: pw.TerminalRef) -> None: ...

    def client_capabilities(self) -> dict[str, Any]: ...


ShownContent = dict[str, Any]
"""One item of ACP tool-call content a client is shown: ``{type: "diff", path,
oldText, newText}``, ``{type: "terminal", terminalId}`` or ``{type: "content",
content}``. Built by :func:`diff_content`, :func:`terminal_content`, :func:`text_content`."""


def diff_content(path: str, old: str | None, new: str) -> ShownContent:
    """ACP ``diff`` content; ``old`` None is a new file (ACP omits ``oldText`` then)."""
    item: ShownContent = {"type": "diff", "path": path, "newText": new}
    if old is not None:
        item["oldText"] = old
    return item


def terminal_content(terminal_id: str) -> ShownContent:
    """ACP ``terminal`` content: the client shows that terminal live."""
    return {"type": "terminal", "terminalId": terminal_id}


def text_content(text: str) -> ShownContent:
    return {"type": "content", "content": {"type": "text", "text": text}}


@dataclass(frozen=True, slots=True)
class CommandShown:
    """A command the sidecar runs itself (not in a client's terminal), as it runs: a
    projection that can show an agent-owned terminal (ACP v2's ``terminal_update``)
    shows it as one; others show the call's content (the same ``output``)."""

    command: str
    cwd: str
    """Absolute."""
    output: str
    """Everything kept of the output so far (`commands.output.BoundedOutput.text`)."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    session_id: str
    tool_call_id: str
    cwd: str
    roots: tuple[str, ...]
    link: ClientChannel
    progress: Callable[[list[ShownContent]], None] | None = None
    """Shows the call's content so far while it runs (a command's output, the terminal
    it runs in), as a ``tool_call_update``; live only, the result is what is kept.
    None where nobody watches."""
    confined: bool = False
    """Run in the sandbox (``commands/confine.py``): the session's mode let the call run
    unasked on that condition."""
    asking: Callable[[], AbstractContextManager[None]] = nullcontext
    """Held while the call waits for the user (``ask_user``'s question): every window
    shows the session as ``requires_action`` meanwhile."""
    child_progress: Callable[[str, list[ShownContent]], None] | None = None
    """Shows the content so far of a call that runs a child session (``delegate``),
    naming the child (``_meta.threadline.childSessionId``) so a client can open it."""

    progress_command: Callable[[list[ShownContent], CommandShown], None] | None = None
    """``progress`` for a command the sidecar runs: the content and the command it
    shows (``run_command``). None: ``progress`` shows the content alone."""

    def report(self, content: list[ShownContent], command: CommandShown | None = None) -> None:
        if command is not None and self.progress_command is not None:
            self.progress_command(content, command)
        elif self.progress is not None:
            self.progress(content)

    def report_child(self, child_session_id: str, content: list[ShownContent]) -> None:
        if self.child_progress is not None:
            self.child_progress(child_session_id, content)


@dataclass(slots=True)
class ToolOutcome:
    content: list[dict[str, Any]]
    is_error: bool = False
    raw_output: Any = None
    compact_summary: str | None = None
    locations: list[dict[str, Any]] = field(default_factory=list)
    final_message: str | None = None
    """Set by a call that ends the turn with a message to the user (``ask_user`` to a
    client that cannot ask): the turn stores this as its final answer and stops; the
    user's next prompt continues."""
    display: list[ShownContent] = field(default_factory=list)
    """What clients are shown of the call besides ``content`` (its diff, the terminal it
    ran in), first in the final ``tool_call_update``; the model never sees it."""
    plan: list[dict[str, Any]] | None = None
    """A new plan (``update_plan``): the whole list of ``{content, priority, status}``
    entries, for the engine to store and announce as ACP's ``plan`` update."""
    usage: Usage | None = None
    """Model tokens the call spent (a child session's turn), added to the turn's usage."""
    child_session_id: str | None = None
    """The child session the call ran (``delegate``): stored on its result, so clients
    can open the child live and on replay."""

    @classmethod
    def text(
        cls,
        text: str,
        *,
        is_error: bool = False,
        raw: Any = None,
        final_message: str | None = None,
    ) -> ToolOutcome:
        return cls(
            [{"type": "text", "text": text}],
            is_error=is_error,
            raw_output=raw,
            final_message=final_message,
        )


MUTATING_KINDS: frozenset[str] = frozenset({"edit", "delete", "move", "execute"})
"""Kinds of tool that change the workspace: a call of one is checkpointed around."""


class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]
    kind: ToolKind
    parallelizable: bool
    needs_permission: bool
    timeout: float

    def title(self, arguments: dict[str, Any]) -> str: ...

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]: ...

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome: ...


@runtime_checkable
class Previewing(Protocol):
    """A tool that can show what a call would do before it runs (an edit's diff): the
    content goes on the call's first ``tool_call`` and in its permission request."""

    async def preview(self, arguments: dict[str, Any], ctx: ToolContext) -> list[ShownContent]:
        """The content to show; [] when the call would fail (``run`` says why)."""
        ...


async def preview_of(tool: Tool, arguments: dict[str, Any], ctx: ToolContext) -> list[ShownContent]:
    """What a call would change, for the user to see before it runs; [] for a tool that
    cannot say, or when working it out fails (the run reports the failure)."""
    if not isinstance(tool, Previewing):
        return []
    try:
        return await tool.preview(arguments, ctx)
    except Exception:
        return []


def mutates(tool: Tool) -> bool:
    """Whether a call may change the workspace's files, so checkpoints are taken
    around it: the tool's own ``mutating`` when it declares one (a client tool does),
    else what its kind says (an edit, a deletion, a move, a command)."""
    declared = getattr(tool, "mutating", None)
    if isinstance(declared, bool):
        return declared
    return tool.kind in MUTATING_KINDS
