"""What a tool is, to the turn loop: a name, a schema, and an async ``run``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from threadline_protocol import methods as pm

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

    def client_capabilities(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    session_id: str
    tool_call_id: str
    cwd: str
    roots: tuple[str, ...]
    link: ClientChannel


@dataclass(slots=True)
class ToolOutcome:
    content: list[dict[str, Any]]
    is_error: bool = False
    raw_output: Any = None
    compact_summary: str | None = None
    locations: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def text(cls, text: str, *, is_error: bool = False, raw: Any = None) -> ToolOutcome:
        return cls([{"type": "text", "text": text}], is_error=is_error, raw_output=raw)


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


def mutates(tool: Tool) -> bool:
    """Whether a call may change the workspace's files, so checkpoints are taken
    around it: the tool's own ``mutating`` when it declares one (a client tool does),
    else what its kind says (an edit, a deletion, a move, a command)."""
    declared = getattr(tool, "mutating", None)
    if isinstance(declared, bool):
        return declared
    return tool.kind in MUTATING_KINDS
