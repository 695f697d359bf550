"""A session's options, as stored in its row and set at ``session/new``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(slots=True)
class SessionConfig:
    model: str
    system_prompt: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    exit_tools: list[dict[str, Any]] = field(default_factory=list)
    tool_budget: int = 25
    auto_compact: bool | float = True
    strict_tools: bool = False
    builtin_tools: bool | list[str] = True
    max_tokens: int | None = None
    temperature: float | None = None
    roots: list[str] = field(default_factory=list)
    mode: str = "code"
    """``ask``, ``plan``, ``code`` or ``auto`` (``tools/modes.py``)."""
    approvals: list[dict[str, Any]] = field(default_factory=list)
    """Kept "always" answers (``tools/approvals.py``): stored with the session, so they
    survive restarts and a fork inherits them."""
    child: dict[str, Any] | None = None
    """A child session's place (``engine/children.py``): ``parentSessionId``,
    ``toolCallId`` (the parent's ``delegate`` call) and ``depth`` (1 for a child of a
    top-level session); None for a session a person started."""

    @property
    def depth(self) -> int:
        """How many ``delegate`` calls deep the session runs (0: started by a person)."""
        return int(self.child["depth"]) if self.child else 0

    def options_shown(self) -> tuple[str, str, bool]:
        """What its config options show (`options.py`): the model, the mode, and
        whether any built-in tool is on (a list of names is some of them)."""
        builtin = self.builtin_tools
        on = builtin if isinstance(builtin, bool) else bool(builtin)
        return (self.model, self.mode, on)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionConfig:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)
