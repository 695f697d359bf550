"""What a tool is, to the turn loop: a name, a schema, and an async ``run``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]


class ClientChannel(Protocol):
    """What a tool may ask of the editor: a server-to-client request (``fs/*``,
    ``tool/call``, ``session/request_permission``) and what the editor said it can do.
    The engine's client link is one; tools need nothing else of the connection."""

    async def request(self, method: str, params: dict[str, Any]) -> Any: ...

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
