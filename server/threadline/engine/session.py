"""A live session: its transcript, options, tools and the one task it may be running.

State machine: idle → running (a turn) or compacting → idle. One task runs at a time
(`tasks.py`); other sessions run theirs concurrently. A session is the `TurnHost` its
turns and compactions run against (``host.py``): they reach the store, the link and
the permissions only through it. Loading, freshness and leases are `live.py`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..checkpoints import CheckpointError
from ..providers.base import ChatMessage, ChatRequest, Provider, ToolCallFinal, ToolSpec
from ..store.base import (
    PendingPrompt,
    SessionRow,
    SessionStore,
    StoreConflict,
    StoredEvent,
    StoreError,
)
from ..tools import modes
from ..tools.approvals import Approvals
from ..tools.base import CommandShown, Tool, ToolContext
from ..tools.delegate import Delegator
from ..tools.permissions import PermissionBroker
from ..tools.registry import ToolRegistry
from ..userconfig import Price
from . import events
from .bursts import BurstJournal
from .compiler import compile_request, request_tail, to_chat_messages
from .config import SessionConfig
from .cost import CostTally
from .errors import SessionBusy, SessionNotFound
from .ids import now_iso
from .images import ImageRules, has_images
from .link import ClientLink
from .mutations import Msg, Mutation, WorkspaceCheckpoint, from_event
from .outcomes import Interrupted
from .tasks import RunningTask, Work
from .transcript import Transcript
from .workspace import Workspaces, session_roots

if TYPE_CHECKING:
    from ..providers.registry import ProviderRegistry
    from ..tools.factory import SessionTools
    from ..tools.selection import ToolSelector

log = logging.getLogger(__name__)

TITLE_MAX = 80


def bios(offered: Sequence[ToolSpec], exit_names: frozenset[str], budget: int) -> str | None:
    """The tool section of the system prompt, for the tools this call is offered;
    none when it is offered none. Rebuilt whenever the budget changes."""
    if not offered:
        return None
    lines = [
        "Tools: call a tool when it helps answer; otherwise answer directly.",
        f"Tool calls left in this turn: {max(budget, 0)}.",
    ]
    signals = sorted(exit_names & {t.name for t in offered})
    if signals:
        lines.append(
            "Signal tools (" + ", ".join(signals) + ") only record a signal; they return nothing."
        )
    lines.append(
        "If you cannot make a structured tool call, write one JSON object: "
        '{"tool": "<name>", "arguments": {...}}'
    )
    return "\n".join(lines)


@dataclass(slots=True)
class Shown:
    """What a session's client was last shown of its state, so each change is shown
    once whether it was made here or in another window."""

    title: str | None
    model: str
    options: tuple[str, str, bool]
    """``(model, mode, built-in tools on)``: the config options as last shown."""
    state: str = "idle"
    owner: tuple[str, str] | None = None
    """The owner id and lease start of the work shown as running."""
    queue: tuple[tuple[str, str, str], ...] = ()
    """``(id, state, prompt JSON)`` of each prompt shown as waiting."""
    forks: set[str] | None = None
    """Forks shown (those made before the client looked are not announced)."""
    prompts: set[str] = field(default_factory=set[str])
    """User messages shown while they waited (steering), not shown again on commit."""
    unshown: list[Msg] = field(default_factory=list[Msg])
    """Messages other processes committed that the client has not been shown yet:
    whichever path folded them in (the feed's look, or any request's `LiveSessions.sync`),
    the feed announces them."""
    rewound: bool = False
    """What the client shows stopped being a prefix of the session (a rewind elsewhere)."""

    def arrived(self, messages: list[Msg], before: int, anchor: str | None) -> None:
        """Note what a catch-up added after the ``before`` messages whose last was
        ``anchor``: new messages to show, or a cut that makes the client reload."""
        kept = messages[before - 1]["messageId"] if 0 < before <= len(messages) else None
        if before and kept != anchor:
            self.rewound = True
            self.unshown.clear()
        else:
            self.unshown.extend(messages[before:])

    def seen_all(self) -> None:
        """The client was just shown the whole session (a replay, or its first look)."""
        self.unshown.clear()
        self.rewound = False


def _unwatched(session: Session) -> None:
    return None


def _not_said(session: Session, awaiting: bool) -> None:
    return None


class StoreJournal:
    """A session's stream journal, kept in its store (`host.StreamJournal`)."""

    __slots__ = ("bursts", "session_id", "store")

    def __init__(self, store: SessionStore, session_id: str, bursts: BurstJournal) -> None:
        self.store = store
        self.session_id = session_id
        self.bursts = bursts

    def begin(self, message_id: str, meta: dict[str, Any]) -> None:
        self.store.begin_stream(self.session_id, message_id, meta)

    async def append(self, runs: Sequence[tuple[str, str]]) -> None:
        await self.bursts.append(self.session_id, runs)

    def clear(self) -> None:
        self.store.clear_stream(self.session_id)


class Session:
    def __init__(
        self,
        row: SessionRow,
        transcript: Transcript,
        store: SessionStore,
        providers: ProviderRegistry,
        link: ClientLink,
        seq: int,
        workspaces: Workspaces,
        bursts: BurstJournal | None = None,
        delegator: Delegator | None = None,
    ) -> None:
        self.id = row.id
        self.delegator = delegator
        """Runs the child sessions of its ``delegate`` calls (none: it has no such tool)."""
        self.workspaces = workspaces
        self.checkpoint_notice: str | None = None
        """Why the workspace could not be checkpointed (said once: logged, and in
        ``session/diff``'s answer), e.g. too many files."""
        self.row = row
        self._cost = CostTally()
        self.cwd = row.cwd
        self.title = row.title
        self.config = SessionConfig.from_json(row.config)
        self.transcript = transcript
        self.seq = seq
        """The session's own last event this process has folded into the transcript."""
        self.checked = -1
        """The engine's store generation at which ``seq`` was last compared with the store."""
        self.checked_token = 0
        """The store's change token when this process last knew the session current:
        other processes' changes named since then (`SessionStore.changed_since`) say
        whether it must be read again."""
        self._steering_looked: int | None = None
        """The store's change token when the prompts waiting for this session were last
        read for steering (`take_steering`); None: read them at the next look."""
        self.store = store
        self.providers = providers
        self.link = link
        self.running: RunningTask[Any] | None = None
        """The task the session runs now (a turn, a compaction), if any."""
        self.awaiting = 0
        self.warned_images = False
        """Whether its client was told its model reads placeholders for images."""
        """Permission requests of its turn waiting for the user (``requires_action``)."""
        self.shown = Shown(title=row.title, model=self.config.model, options=self.options_shown())
        """What its client was last shown of the session's state (`feed.py`)."""
        self.heard = True
        """Whether its events go to this process's client: not for a child session
        until the client opens it (`feed.Feed.subscribe`); its parent's call shows it."""
        self.watchers: list[Callable[[events.Event], None]] = []
        """Told every event the session announces (a parent following its child)."""
        self.changed: Callable[[Session], None] = _unwatched
        """Called when its state changes here (a task starts or ends, a permission
        waits), so every window is told (`feed.Feed`)."""
        self.on_awaiting: Callable[[Session, bool], None] = _not_said
        """Called when its turn starts or stops waiting for the user, so other
        processes' windows are told (`LiveSessions`, through the lease)."""
        self.permissions = PermissionBroker(
            Approvals(lambda: self.config.approvals, self.save_config)
        )
        self.journal = StoreJournal(store, self.id, bursts or BurstJournal(store))
        self._tools: tuple[SessionTools, ToolSelector] | None = None

    def _built(self) -> tuple[SessionTools, ToolSelector]:
        """The session's tools, made on first need: answering ``session/history`` or
        replaying ``session/load`` uses none, and making them imports the tool modules
        (jsonschema, the workspace tools: ~50 ms of a fresh process's first open)."""
        if self._tools is None:
            from ..tools.factory import SessionTools
            from ..tools.selection import ToolSelector

            toolset = SessionTools(self._registry(), cwd=self.cwd)
            self._tools = (toolset, ToolSelector(toolset.registry))
        return self._tools

    def make_tools(self) -> None:
        self._built()

    @property
    def tools_made(self) -> bool:
        return self._tools is not None

    @property
    def toolset(self) -> SessionTools:
        return self._built()[0]

    @property
    def tools(self) -> ToolRegistry:
        return self._built()[0].registry

    @property
    def offers(self) -> ToolSelector:
        return self._built()[1]

    async def close_tools(self) -> None:
        """Stop the session's tools (MCP servers, terminals) if any were made."""
        if self._tools is not None:
            await self._tools[0].aclose()

    def set_builtin_tools(self, enabled: bool) -> None:
        """Turn the built-in tools on or off; client and MCP tools stay as they are."""
        self.config.builtin_tools = enabled
        if self._tools is None:
            return  # made with this setting on first need
        old, new = self.tools, self._registry()
        for name in old.names():
            tool = old.get(name)
            if tool is not None and new.get(name) is None and self._is_mcp(tool):
                new.add(tool)
        self.toolset.registry = new

    @staticmethod
    def _is_mcp(tool: Tool) -> bool:
        from ..tools.mcp import McpTool

        return isinstance(tool, McpTool)

    def _registry(self) -> ToolRegistry:
        from ..tools.ask import ASK_USER, AskUser
        from ..tools.factory import build_registry
        from ..tools.memory import ForgetTool, RememberTool
        from .memory import SessionMemory

        builtin = self.config.builtin_tools
        names = None if isinstance(builtin, bool) else set(builtin)
        enabled = builtin is True or bool(names)
        facts = SessionMemory(self.commit, lambda: self.transcript.experiences)
        server_side: list[Tool] = []
        if enabled and (names is None or "remember" in names):
            server_side.append(RememberTool(facts))
        if enabled and (names is None or "forget" in names):
            server_side.append(ForgetTool(facts))
        if enabled and (names is None or ASK_USER in names):
            server_side.append(AskUser())
        delegate = self._delegate_tool()
        if delegate is not None and enabled and (names is None or delegate.name in names):
            server_side.append(delegate)
        registry = build_registry(
            tools=self.config.tools,
            exit_tools=self.config.exit_tools,
            client_capabilities=self.link.client_capabilities(),
            builtin=builtin,
            extra_tools=server_side,
        )
        registry.visible = lambda tool: (
            modes.offers(self.config.mode, tool)
            and (tool.name != "delegate" or self._may_delegate())
        )
        return registry

    def options_shown(self) -> tuple[str, str, bool]:
        return self.config.options_shown()

    def _may_delegate(self) -> bool:
        return self.delegator is not None and self.delegator.may_delegate(self.config.depth)

    def _delegate_tool(self) -> Tool | None:
        from ..tools.delegate import Delegate

        return None if self.delegator is None else Delegate(self.delegator)

    def save_config(self) -> None:
        """Store the session's options (its mode, kept approvals…) with its row."""
        self.store.update_session(self.id, config=self.config.to_json(), now=now_iso())

    # -- state ------------------------------------------------------------------------

    @property
    def state(self) -> str:
        running = self.running
        if running is None or running.work is None:
            return "idle"
        if self.awaiting and running.work is Work.TURN:
            return "requires_action"
        return running.work.state

    def check_idle(self, action: str) -> None:
        running = self.running
        if running is not None:
            state = "idle" if running.work is None else running.work.state
            raise SessionBusy(
                f"session {self.id} is {state}; cannot {action} now",
                {"sessionId": self.id, "state": state},
            )

    # -- mutations and updates ------------------------------------------------------------

    def commit(self, mutations: Sequence[Mutation], *, end_stream: bool = False) -> None:
        """Store first, then apply: what the transcript shows is always durable. The
        append names the event it follows, so a history another process extended
        meanwhile is never interleaved with ours."""
        try:
            self.seq = self.store.append(
                self.id,
                [m.to_event() for m in mutations],
                now_iso(),
                end_stream,
                expected_seq=self.seq,
            )
        except StoreConflict as exc:
            raise SessionBusy(str(exc), {"sessionId": self.id, "state": "running"}) from exc
        except KeyError as exc:
            raise SessionNotFound(self.id) from exc
        for m in mutations:
            self.transcript.apply(m)

    def catch_up(self, events: list[StoredEvent], row: SessionRow) -> None:
        """Fold what other processes committed since ``seq``."""
        before, anchor = len(self.transcript), self.transcript.last_message_id
        for e in events:
            self.transcript.apply(from_event(e.kind, e.payload))
            self.seq = e.seq
        if events:
            self.shown.arrived(self.transcript.messages, before, anchor)
        self.row = row
        self.title = row.title
        if self.running is None:
            self.config = SessionConfig.from_json(row.config)

    def announce(self, event: events.Event) -> None:
        for watch in self.watchers:
            watch(event)
        if self.heard:
            self.link.announce(self.id, event)

    def maybe_title(self, prompt: list[dict[str, Any]]) -> None:
        if self.title:
            return
        text = next((b.get("text", "") for b in prompt if b.get("type") == "text"), "")
        title = " ".join(str(text).split())[:TITLE_MAX]
        if not title:
            return
        self.title = self.shown.title = title
        now = now_iso()
        self.store.update_session(self.id, title=title, now=now)
        self.announce(events.SessionInfo(now, title=title))

    # -- tools ----------------------------------------------------------------------------

    def tool_context(self, call_id: str, *, confined: bool = False) -> ToolContext:
        def progress(content: list[dict[str, Any]]) -> None:
            self.announce(events.ToolProgress(call_id, tuple(content)))

        def progress_command(content: list[dict[str, Any]], command: CommandShown) -> None:
            self.announce(events.ToolProgress(call_id, tuple(content), command=command))

        def child_progress(child_id: str, content: list[dict[str, Any]]) -> None:
            self.announce(events.ToolProgress(call_id, tuple(content), child_id))

        return ToolContext(
            self.id,
            call_id,
            self.cwd,
            tuple(self.config.roots),
            self.link,
            progress,
            confined,
            self.asking_user,
            child_progress,
            progress_command,
        )

    @contextmanager
    def asking_user(self) -> Generator[None]:
        """While a call waits for the user (a permission, ``ask_user``'s question),
        every window shows the session as ``requires_action``: this one at once,
        others through the session's lease (`on_awaiting`)."""
        self.awaiting += 1
        if self.awaiting == 1:
            self.on_awaiting(self, True)
        self.changed(self)
        try:
            yield
        finally:
            self.awaiting -= 1
            if self.awaiting == 0:
                self.on_awaiting(self, False)
            self.changed(self)

    async def authorize(
        self, tool: Tool, call: ToolCallFinal, shown: Sequence[dict[str, Any]] = ()
    ) -> modes.Decision:
        """Whether a call may run, as the session's mode and kept approvals say, asking
        the user when they leave it open: ``run``, ``confined`` or ``refuse``."""
        from ..tools.commands import confine

        decision = modes.decide(
            self.config.mode,
            tool,
            call.arguments,
            self.permissions.approvals,
            sandbox=tool.name == "run_command" and confine.available(),
        )
        if decision.action != "ask":
            return decision
        ctx = self.tool_context(call.id)
        with self.asking_user():
            allowed = await self.permissions.ask(tool, call, ctx, list(shown), now=now_iso())
        if allowed:
            return modes.Decision("run")
        return modes.Decision(
            "refuse",
            "The user refused permission for this tool call. Do not retry it; "
            "continue without it or ask the user.",
        )

    # -- prompts sent while it works ----------------------------------------------------

    def take_steering(self, turn_id: str) -> list[tuple[str, list[dict[str, Any]]]]:
        """The store is read only when a prompt may have come since the last look: one
        sent here (`prompts_changed`), or a change another process made that names this
        session or that the store cannot place (always, on SQLite). On PostgreSQL each
        look was a round trip before and after every model call of every turn."""
        taken: list[tuple[str, list[dict[str, Any]]]] = []
        looked = self._steering_looked
        if looked is not None:
            changed = self.store.changed_since(looked)
            if changed is not None and self.id not in changed:
                return taken
        token = self.store.peek_token()
        try:
            waiting_now = self.store.pending(self.id)
        except StoreError as exc:  # the turn goes on; steering joins at a later call
            log.warning("could not look for steering input of %s: %s", self.id, exc)
            return taken
        self._steering_looked = token
        for waiting in waiting_now:
            if waiting.mode != "steer" or waiting.state != "waiting":
                continue
            got = self.store.claim_pending(waiting.id, turn_id)
            if got is not None:
                taken.append((got.id, got.prompt))
        return taken

    def queue_seen(self, token: int, pending: Sequence[PendingPrompt]) -> None:
        """The session's prompts as a read begun at ``token`` found them (the feed's
        look, which a turn's start makes): with none waiting to steer, the turn's first
        look for steering need not read them again."""
        steering = any(p.mode == "steer" and p.state == "waiting" for p in pending)
        self._steering_looked = None if steering else token

    def prompts_changed(self) -> None:
        """A prompt of this session was sent, edited or resumed in this process (which
        does not hear its own changes on the store's feed): the next look for steering
        reads the store."""
        self._steering_looked = None

    def show_prompt(self, message: Msg) -> None:
        if message["messageId"] in self.shown.prompts:
            return
        self.shown.prompts.add(message["messageId"])
        self.announce(events.Replayed(message))

    # -- checkpoints ------------------------------------------------------------------------

    @property
    def roots(self) -> list[str]:
        """The workspace folders its checkpoints cover."""
        return session_roots(self.cwd, self.config.roots)

    async def checkpoint(self, moment: str) -> None:
        """Record the workspace's state here (``before`` a turn's first change, ``after``
        each); an ``after`` that changed nothing records nothing. Never fails a turn:
        a workspace that cannot be checkpointed is said once and skipped."""
        ws = self.workspaces
        if not ws.enabled:
            return
        try:
            trees = await ws.snapshot(self.roots)
        except CheckpointError as exc:
            if self.checkpoint_notice is None:
                log.warning("session %s: no checkpoint: %s", self.id, exc)
            self.checkpoint_notice = str(exc)
            return
        marks = self.transcript.marks
        if moment == "after" and marks and marks[-1].trees == trees:
            return
        self.commit([WorkspaceCheckpoint(trees, ws.host, moment)])

    # -- model ----------------------------------------------------------------------------

    async def provider(self) -> Provider:
        return await self.providers.get(self.config.model)

    def price(self, model: str) -> Price | None:
        return self.providers.price(model)

    def cost(self, pending: tuple[str, int, int]) -> float | None:
        return self._cost.cost(self.transcript.messages, self.price, pending)

    def compile_request(
        self,
        *,
        budget: int,
        tools_off: bool = False,
        ephemeral: Sequence[ChatMessage] = (),
        context_window: int | None = None,
        working: Sequence[Msg] | None = None,
    ) -> ChatRequest:
        """``working`` replaces the transcript's messages (to size a prompt before it
        is committed); ``context_window`` bounds each tool result."""
        if working is None:
            working = self.transcript.working()
        images = ImageRules(self.providers.images(self.config.model), self.store.get_blob)
        if not images.support.sees and not self.warned_images:
            self._warn_images(working)
        offered: list[ToolSpec] = []
        if not tools_off:
            limits = self.providers.tool_limits(self.config.model)
            offered = self.offers.offer(to_chat_messages(request_tail(working)), limits).specs
        system_prompt = self.config.system_prompt
        if self.config.mode == "plan":
            system_prompt = "\n\n".join(filter(None, [system_prompt, modes.PLAN_PROMPT]))
        return compile_request(
            ephemeral=ephemeral,
            system_prompt=system_prompt,
            experiences=self.transcript.experiences,
            working=working,
            context_window=context_window,
            tools=offered,
            bios=bios(offered, self.tools.exit_names, budget),
            max_tokens=self.config.max_tokens
            or self.providers.default_max_tokens(self.config.model),
            temperature=self.config.temperature,
            images=images,
        )

    def _warn_images(self, working: Sequence[Msg]) -> None:
        """Say once that this model reads placeholders for the session's images."""
        if any(has_images(m["content"]) for m in working):
            self.warned_images = True
            warning = (
                f"{self.config.model} cannot see images: it reads a placeholder such as "
                "[image: 1280×720 PNG, 84 KB — this model cannot see images] instead"
            )
            self.announce(events.SessionInfo(now_iso(), warning=warning))

    # -- tasks ----------------------------------------------------------------------------

    def interruptible(self) -> RunningTask[Any] | None:
        """The running task that an interrupt stops (a turn), if any."""
        running = self.running
        if running is None or running.work is None or not running.work.interruptible:
            return None
        return running

    async def interrupt(self) -> Interrupted:
        running = self.interruptible()
        if running is None or not running.cancel():
            return Interrupted(False)
        await running.done.wait()
        return Interrupted(True, running.task.turn_id)

    def compaction_limit(self, provider: Provider) -> int | None:
        """Prompt tokens above which a turn compacts first; None when turned off."""
        auto = self.config.auto_compact
        if auto is False:
            return None
        fraction = 0.8 if auto is True else float(auto)
        return int(provider.context_window * fraction)

    def request_interrupt(self) -> None:
        """Fire-and-forget form for ``session/cancel``."""
        running = self.interruptible()
        if running is not None:
            running.cancel()
