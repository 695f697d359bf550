"""What a tool is, to the turn loop: a name, a schema, and an async ``run``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from ..engine.link import ClientLink

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]


@dataclass(frozen=True, slots=True)
class ToolContext:
    session_id: str
    tool_call_id: str
    cwd: str
    roots: tuple[str, ...]
    link: ClientLink


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
