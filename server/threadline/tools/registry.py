"""One registry per session for every tool source, and the partition of model calls."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..providers.base import ToolCallFinal, ToolSpec
from .base import Tool


@dataclass(frozen=True, slots=True)
class Partition:
    normal: list[ToolCallFinal]
    exits: list[ToolCallFinal]
    unknown: list[ToolCallFinal]


class ToolRegistry:
    def __init__(
        self,
        tools: Iterable[Tool] = (),
        exit_tools: Iterable[dict[str, Any]] = (),
        always_offer: Iterable[str] = (),
    ) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self._tools[t.name] = t
        self._exit: dict[str, dict[str, Any]] = {d["name"]: d for d in exit_tools}
        self._hidden: dict[str, Tool] = {}
        self.always_offer: frozenset[str] = frozenset(always_offer)
        """Tools offered on every model call, whatever the request (``alwaysOffer``)."""
        self.visible: Callable[[Tool], bool] = lambda _tool: True
        """Which tools ``specs()`` lists: the session's mode hides what it forbids (a
        call to a hidden tool is still a known tool, refused when it is decided)."""

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def add_hidden(self, tool: Tool) -> None:
        """A tool the engine offers on its own terms (``find_tools``): callable, but
        never listed by ``specs()``; a listed tool of the same name wins."""
        self._hidden[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name) or self._hidden.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def describe_call(self, name: str, arguments: Any) -> tuple[str, str]:
        """The title and kind clients show for a call, the same live and on replay
        (a call the engine answered itself, or one with bad arguments, included)."""
        tool = self._tools.get(name)
        if tool is None:
            return name, "other"
        try:
            return tool.title(arguments if isinstance(arguments, dict) else {}), tool.kind
        except Exception:
            return name, tool.kind

    @property
    def exit_names(self) -> frozenset[str]:
        return frozenset(self._exit)

    def __bool__(self) -> bool:
        return bool(self._tools or self._exit)

    def specs(self) -> list[ToolSpec]:
        """Normal tools first, then exit tools: the model may call either."""
        out = [
            ToolSpec(t.name, t.description, t.parameters)
            for t in self._tools.values()
            if self.visible(t)
        ]
        out += [
            ToolSpec(
                d["name"], d.get("description", ""), d.get("inputSchema") or {"type": "object"}
            )
            for d in self._exit.values()
        ]
        return out

    def partition(self, calls: Sequence[ToolCallFinal]) -> Partition:
        normal: list[ToolCallFinal] = []
        exits: list[ToolCallFinal] = []
        unknown: list[ToolCallFinal] = []
        for c in calls:
            if c.name in self._exit:
                exits.append(c)
            elif c.name in self._tools or c.name in self._hidden:
                normal.append(c)
            else:
                unknown.append(c)
        return Partition(normal, exits, unknown)
