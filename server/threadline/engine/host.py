"""What a turn and a compaction may ask of the session they run in.

A turn runner is handed this narrow host, not the whole `Session`: it can commit
mutations, announce what happened, journal the answer it streams, compile a request,
reach the provider and the session's tools, read the options it runs under, and ask
the user's permission. The session's store, link, leases and state machine stay the
session's own, so the loop can be run (and tested) against a fake host, and
`session.py` → `turn.py` → `host.py` is the only direction imports go.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..providers.base import ChatMessage, ChatRequest, Provider, ToolCallFinal
from ..tools.base import Tool, ToolContext
from ..tools.modes import Decision
from ..tools.registry import ToolRegistry
from ..userconfig import Price
from .config import SessionConfig
from .events import Event
from .mutations import Msg, Mutation
from .transcript import Transcript


class StreamJournal(Protocol):
    """Where the answer being streamed is written before clients are shown it, so a
    crash can turn what was shown into a truncated message (``engine.recover``)."""

    def begin(self, message_id: str, meta: dict[str, Any]) -> None:
        """Start the journal of one answer (``meta``: its turn id and model)."""
        ...

    async def append(self, runs: Sequence[tuple[str, str]]) -> None:
        """One burst, as ``(kind, text)`` runs (kind ``text`` or ``thought``), written
        before this returns (with other sessions' bursts of the moment, `engine.bursts`)."""
        ...

    def clear(self) -> None:
        """Drop the journal of an answer that left nothing to store."""
        ...


class CompactionHost(Protocol):
    """What a compaction needs: the transcript, the model, and a way to commit."""

    @property
    def id(self) -> str: ...

    @property
    def transcript(self) -> Transcript:
        """Read only: every change goes through `commit`."""
        ...

    @property
    def config(self) -> SessionConfig:
        """The session's options; they do not change while a turn or compaction runs
        (the session refuses option changes unless idle)."""
        ...

    async def provider(self) -> Provider: ...

    def compile_request(
        self,
        *,
        budget: int,
        tools_off: bool = False,
        ephemeral: Sequence[ChatMessage] = (),
        context_window: int | None = None,
        working: Sequence[Msg] | None = None,
    ) -> ChatRequest:
        """The next model request; ``working`` replaces the transcript's messages (to
        size a prompt before it is committed)."""
        ...

    def compaction_limit(self, provider: Provider) -> int | None:
        """Prompt tokens above which a turn compacts first; None when turned off."""
        ...

    def commit(self, mutations: Sequence[Mutation], *, end_stream: bool = False) -> None:
        """Store, then apply; ``end_stream`` also ends the stream journal."""
        ...

    def announce(self, event: Event) -> None:
        """Tell the session's clients; never blocks."""
        ...


class TurnHost(CompactionHost, Protocol):
    """What a turn needs on top: the journal, the tools, permission and the title."""

    @property
    def journal(self) -> StreamJournal: ...

    @property
    def tools(self) -> ToolRegistry: ...

    def price(self, model: str) -> Price | None:
        """What ``model``'s tokens cost (threadline.toml's ``price``); None: unpriced."""
        ...

    def cost(self, pending: tuple[str, int, int]) -> float | None:
        """The session's cost with ``pending`` (model, input and output tokens of a
        call whose answer is not stored yet; `cost.session_cost`)."""
        ...

    def tool_context(self, call_id: str, *, confined: bool = False) -> ToolContext:
        """What a tool run (or its ``locations``) is given for one call; ``confined``:
        it runs in the sandbox."""
        ...

    async def authorize(
        self, tool: Tool, call: ToolCallFinal, shown: Sequence[dict[str, Any]] = ()
    ) -> Decision:
        """Whether this call may run: the session's mode, its kept approvals, and the
        user when those leave it open (``run``, ``confined`` or ``refuse``)."""
        ...

    def maybe_title(self, prompt: list[dict[str, Any]]) -> None:
        """Name an untitled session after its first prompt."""
        ...

    def take_steering(self, turn_id: str) -> list[tuple[str, list[dict[str, Any]]]]:
        """Prompts sent to steer the running turn since the last look, each taken for
        this turn once and for all: ``(message id, content)`` in the order they came."""
        ...

    def show_prompt(self, message: Msg) -> None:
        """Show the clients a user message (once: a steering prompt is shown when it is
        sent, not again when it joins the turn)."""
        ...

    async def checkpoint(self, moment: str) -> None:
        """Record the workspace's files (``before`` the turn's first change to them,
        ``after`` each); never fails the turn (``engine/workspace.py``)."""
        ...
