"""A live session: its transcript, options, tools and the one turn it may be running.

State machine: idle → running → idle, with ``compacting``/``forking`` as short busy
states and ``closed`` once unloaded. Only one turn runs at a time; other sessions run
theirs concurrently.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from ..providers.base import ChatMessage, ChatRequest, Provider
from ..store.sqlite import EventStore, SessionRow
from ..tools.base import Tool
from ..tools.permissions import PermissionBroker
from ..tools.registry import ToolRegistry
from . import compaction, updates
from .compiler import compile_request
from .config import SessionConfig
from .errors import SessionBusy
from .ids import now_iso
from .link import ClientLink
from .mutations import Mutation
from .transcript import Transcript
from .turn import Turn

if TYPE_CHECKING:
    from ..providers.registry import ProviderRegistry

log = logging.getLogger(__name__)

TITLE_MAX = 80


def bios(registry: ToolRegistry, budget: int) -> str | None:
    """The tool section of the system prompt; rebuilt whenever the budget changes."""
    if not registry:
        return None
    lines = [
        "Tools: call a tool when it helps answer; otherwise answer directly.",
        f"Tool calls left in this turn: {max(budget, 0)}.",
    ]
    if registry.exit_names:
        lines.append(
            "Signal tools (" + ", ".join(sorted(registry.exit_names)) + ") only record a signal; "
            "they return nothing."
        )
    lines.append(
        "If you cannot make a structured tool call, write one JSON object: "
        '{"tool": "<name>", "arguments": {...}}'
    )
    return "\n".join(lines)


class Session:
    def __init__(
        self,
        row: SessionRow,
        transcript: Transcript,
        store: EventStore,
        providers: ProviderRegistry,
        link: ClientLink,
    ) -> None:
        self.id = row.id
        self.row = row
        self.cwd = row.cwd
        self.title = row.title
        self.config = SessionConfig.from_json(row.config)
        self.transcript = transcript
        self.store = store
        self.providers = providers
        self.link = link
        self.turn: Turn | None = None
        self.busy: str | None = None
        self.permissions = PermissionBroker()
        from ..tools.factory import SessionTools  # deferred: not needed for initialize

        self.toolset = SessionTools(self._registry(), cwd=self.cwd)
        self.tools: ToolRegistry = self.toolset.registry

    def set_builtin_tools(self, enabled: bool) -> None:
        """Turn the built-in tools on or off; client and MCP tools stay as they are."""
        self.config.builtin_tools = enabled
        old, new = self.tools, self._registry()
        for name in old.names():
            tool = old.get(name)
            if tool is not None and new.get(name) is None and self._is_mcp(tool):
                new.add(tool)
        self.toolset.registry = self.tools = new

    @staticmethod
    def _is_mcp(tool: Tool) -> bool:
        from ..tools.mcp import McpTool

        return isinstance(tool, McpTool)

    def _registry(self) -> ToolRegistry:
        from ..tools.factory import build_registry
        from ..tools.memory import ForgetTool, RememberTool

        builtin = self.config.builtin_tools
        names = None if isinstance(builtin, bool) else set(builtin)
        enabled = builtin is True or bool(names)
        memory: list[Tool] = []
        if enabled and (names is None or "remember" in names):
            memory.append(RememberTool(self.commit))
        if enabled and (names is None or "forget" in names):
            memory.append(ForgetTool(self.commit, lambda: self.transcript.experiences))
        return build_registry(
            tools=self.config.tools,
            exit_tools=self.config.exit_tools,
            client_capabilities=self.link.client_capabilities(),
            builtin=builtin,
            extra_tools=memory,
        )

    # -- state ------------------------------------------------------------------------

    @property
    def state(self) -> str:
        if self.turn is not None:
            return "running"
        return self.busy or "idle"

    def check_idle(self, action: str) -> None:
        if self.turn is not None or self.busy is not None:
            raise SessionBusy(
                f"session {self.id} is {self.state}; cannot {action} now",
                {"sessionId": self.id, "state": self.state},
            )

    # -- mutations and updates ------------------------------------------------------------

    def commit(self, mutations: list[Mutation], *, end_stream: bool = False) -> None:
        """Store first, then apply: what the transcript shows is always durable."""
        self.store.append(self.id, [m.to_event() for m in mutations], now_iso(), end_stream)
        for m in mutations:
            self.transcript.apply(m)

    def announce(self, update: updates.Update) -> None:
        self.link.notify_update(self.id, update)

    def maybe_title(self, prompt: list[dict[str, Any]]) -> None:
        if self.title:
            return
        text = next((b.get("text", "") for b in prompt if b.get("type") == "text"), "")
        title = " ".join(str(text).split())[:TITLE_MAX]
        if not title:
            return
        self.title = title
        now = now_iso()
        self.store.update_session(self.id, title=title, now=now)
        self.announce(updates.session_info(title, now))

    # -- model ----------------------------------------------------------------------------

    async def provider(self) -> Provider:
        return await self.providers.get(self.config.model)

    def compile_request(
        self, *, budget: int, tools_off: bool = False, ephemeral: Sequence[ChatMessage] = ()
    ) -> ChatRequest:
        registry = self.tools
        return compile_request(
            ephemeral=ephemeral,
            system_prompt=self.config.system_prompt,
            experiences=self.transcript.experiences,
            working=self.transcript.working(),
            tools=[] if tools_off else registry.specs(),
            bios=None if tools_off else bios(registry, budget),
            max_tokens=self.config.max_tokens
            or self.providers.default_max_tokens(self.config.model),
            temperature=self.config.temperature,
        )

    # -- turns ----------------------------------------------------------------------------

    async def prompt(self, prompt: list[dict[str, Any]]) -> dict[str, Any]:
        self.check_idle("prompt")
        turn = Turn(self, prompt)
        self.turn = turn
        try:
            with anyio.CancelScope() as scope:
                turn.scope = scope
                return await turn.run()
            return turn.cancelled_result()
        finally:
            self.turn = None
            turn.done.set()

    async def interrupt(self) -> dict[str, Any]:
        turn = self.turn
        if turn is None or turn.scope is None:
            return {"interrupted": False}
        turn.scope.cancel()
        await turn.done.wait()
        return {"interrupted": True, "turnId": turn.turn_id}

    async def compact(self, instructions: str | None, keep_turns: int) -> dict[str, Any]:
        self.check_idle("compact")
        self.busy = "compacting"
        try:
            return await compaction.compact(
                self,
                instructions=instructions,
                keep_turns=keep_turns,
                turn_id=f"a{self.transcript.turn_number}",
            )
        finally:
            self.busy = None

    def compaction_limit(self, provider: Provider) -> int | None:
        """Prompt tokens above which a turn compacts first; None when turned off."""
        auto = self.config.auto_compact
        if auto is False:
            return None
        fraction = 0.8 if auto is True else float(auto)
        return int(provider.context_window * fraction)

    def request_interrupt(self) -> None:
        """Fire-and-forget form for ``session/cancel``."""
        turn = self.turn
        if turn is not None and turn.scope is not None:
            turn.scope.cancel()
