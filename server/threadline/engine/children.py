"""Child sessions: what a ``delegate`` call runs (`tools/delegate.py`'s `Delegator`).

A child is an ordinary session with a place in its config (``SessionConfig.child``:
parent, the parent's call, depth): stored, listed, loadable, forkable, watchable from
any window. ``fork`` makes it with `forking.fork` (one row: it reads the parent's log
up to now; the parent's open calls, this one included, are cancelled in the child's
copy only), ``fresh`` with `SessionStore.create_session`. Its options are the
parent's, narrowed: the tools it may use are at most the parent's (``tools`` picks
some; a name the parent lacks is refused), its mode and kept approvals are the
parent's, its budget its own (the parent's ``toolBudget``).

It runs one `Turn` under its own lease (`LiveSessions.run`), inside the parent's call:
interrupting the parent cancels it (its partial work kept as any interrupted turn's),
and a kill -9 leaves both to the repair every session gets. Children of one process
run at most `DelegateLimits.parallel` at once. What the child does is followed through
`Session.watchers` and shown as the call's progress with the child's id; its events go
to this process's client only once the client opens it (`Session.heard`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import anyio

from ..providers.registry import UnknownModel
from ..settings import DelegateLimits
from ..tools.base import ToolContext, ToolOutcome, text_content
from ..tools.delegate import DELEGATE, DelegateRequest
from . import blocks, events
from .config import SessionConfig
from .errors import EngineError
from .forking import fork_with_base
from .ids import new_id, now_iso
from .live import LiveSessions
from .mutations import Msg
from .outcomes import TurnOutcome
from .session import Session
from .turn import Turn

log = logging.getLogger(__name__)

CHILD_PROMPT = (
    "You are a sub-agent: another agent handed you the task in the last message. Work on "
    "it with your tools, then answer with what it asked for; your final answer is all it "
    "sees of your work."
)
SHOWN_SECONDS = 0.25
"""How often the parent's call shows the child's streaming text (tool calls at once)."""
CHANGING_KINDS = frozenset({"edit", "delete", "move"})


class Children:
    """The engine's `Delegator`: spawns, runs and reports child sessions."""

    def __init__(self, live: LiveSessions, limits: DelegateLimits) -> None:
        self.live = live
        self.limits = limits
        self._slots: anyio.CapacityLimiter | None = None

    def may_delegate(self, depth: int) -> bool:
        return depth < self.limits.depth

    def _limiter(self) -> anyio.CapacityLimiter:
        if self._slots is None:  # made on the event loop, at the first call
            self._slots = anyio.CapacityLimiter(self.limits.parallel)
        return self._slots

    async def delegate(self, request: DelegateRequest, ctx: ToolContext) -> ToolOutcome:
        parent = self.live.sessions.get(ctx.session_id)
        if parent is None:
            return _refused(f"session {ctx.session_id} is not running here")
        if not self.may_delegate(parent.config.depth):
            return _refused(
                f"the delegation depth limit ({self.limits.depth}) is reached: this session "
                "is a sub-agent that may not start another; do the task yourself"
            )
        try:
            config = self._config(parent, request, ctx.tool_call_id)
        except ValueError as exc:
            return _refused(str(exc))
        child = self._spawn(parent, request, config)
        follow = Following(child, ctx)
        child.watchers.append(follow.seen)
        # Slots bound the children of top-level sessions; a child's own children run
        # within its slot (taking another could wait for ever on a slot it holds).
        slots = self._limiter() if parent.config.depth == 0 else None
        follow.show("waiting for a free slot" if slots and slots.available_tokens < 1 else "")
        try:
            async with contextlib.AsyncExitStack() as held:
                if slots is not None:
                    await held.enter_async_context(slots)
                outcome = await self.live.run(child, Turn(child, [blocks.text(request.task)]))
        except EngineError as exc:
            return follow.failed(f"the child session {child.id} failed: {exc}")
        finally:
            child.watchers.remove(follow.seen)
            follow.stop()
        return follow.finished(outcome)

    # -- making the child ---------------------------------------------------------------

    def _config(self, parent: Session, request: DelegateRequest, call_id: str) -> SessionConfig:
        """The parent's options, narrowed to the tools asked for (never one the parent
        cannot call now) and placed under the parent's call."""
        config = SessionConfig.from_json(parent.config.to_json())
        usable = [n for n in parent.tools.names() if _usable(parent, n)]
        if request.tools is not None:
            missing = sorted(set(request.tools) - set(usable))
            if missing:
                raise ValueError(
                    "not delegated: the sub-agent cannot get tools this session lacks: "
                    + ", ".join(missing)
                    + (f" (yours: {', '.join(usable)})" if usable else " (you have none)")
                )
            usable = [n for n in usable if n in request.tools]
        client = {d["name"] for d in config.tools}
        mcp = {n for n in usable if n not in client and _is_mcp(parent, n)}
        config.tools = [d for d in config.tools if d["name"] in usable]
        config.builtin_tools = [n for n in usable if n not in client and n not in mcp]
        if request.model:
            try:
                config.model = parent.providers.validate(request.model)
            except UnknownModel as exc:
                raise ValueError(f"not delegated: {exc}") from exc
            if problem := parent.providers.key_problem(config.model):
                raise ValueError(f"not delegated: {problem}")
        config.system_prompt = "\n\n".join(filter(None, [config.system_prompt, CHILD_PROMPT]))
        config.child = {
            "parentSessionId": parent.id,
            "toolCallId": call_id,
            "depth": parent.config.depth + 1,
        }
        return config

    def _spawn(self, parent: Session, request: DelegateRequest, config: SessionConfig) -> Session:
        store = self.live.store
        title = _title(request.task)
        child: Session | None = None
        if request.context == "fork":
            forked, base = fork_with_base(self.live, parent.id, None, None)
            child_id = forked.session_id
            store.update_session(child_id, title=title, config=config.to_json(), now=now_iso())
            child = self.live.open_fork(child_id, base)
        else:
            child_id = new_id("sess")
            store.create_session(child_id, parent.cwd, config.to_json(), now_iso(), title)
        if child is None:
            child = self.live.open(child_id)
        child.heard = False
        return child


class Following:
    """The parent's call following one child: its progress as the call's content (with
    the child's id), and its end as the call's result."""

    def __init__(self, child: Session, ctx: ToolContext) -> None:
        self.child = child
        self.ctx = ctx
        self.steps: list[str] = []
        self.text = ""
        self._shown_at = 0.0
        self._later: asyncio.TimerHandle | None = None
        self.start = len(child.transcript.messages)
        """Where the child's turn begins in its transcript."""

    def seen(self, event: events.Event) -> None:
        match event:
            case events.ToolCallStarted(block, _):
                self.steps.append(f"→ {block.get('title') or block.get('name')}")
                self.text = ""
                self.show()
            case events.ToolFinished(block):
                mark = "✓" if block.get("status") == "completed" else "✗"
                self.steps.append(f"  {mark} {block.get('toolName') or ''}".rstrip())
                self.show()
            case events.MessageChunk(_, _, text, False):
                self.text += text
                self._show_soon()
            case _:
                pass

    def _show_soon(self) -> None:
        """Streaming text is shown at most every `SHOWN_SECONDS`, its last piece too."""
        wait = self._shown_at + SHOWN_SECONDS - time.monotonic()
        if wait <= 0:
            self.show()
        elif self._later is None:
            self._later = asyncio.get_running_loop().call_later(wait, self.show)

    def stop(self) -> None:
        if self._later is not None:
            self._later.cancel()
            self._later = None

    def show(self, note: str = "") -> None:
        self.stop()
        self._shown_at = time.monotonic()
        lines = [f"Child session {self.child.id}: {self.child.title or ''}".rstrip()]
        lines += self.steps[-12:]
        if self.text.strip():
            lines.append(self.text.strip()[-400:])
        if note:
            lines.append(f"({note})")
        self.ctx.report_child(self.child.id, [text_content("\n".join(lines))])

    def _outcome(self, text: str, *, error: bool, stop: str, usage: Any = None) -> ToolOutcome:
        outcome = ToolOutcome.text(
            text,
            is_error=error,
            raw={"childSessionId": self.child.id, "stopReason": stop, "changed": self.changed()},
        )
        outcome.child_session_id = self.child.id
        outcome.usage = usage
        return outcome

    def failed(self, why: str) -> ToolOutcome:
        return self._outcome(why, error=True, stop="failed")

    def finished(self, outcome: TurnOutcome) -> ToolOutcome:
        sid = self.child.id
        answer = self.answer()
        stop = outcome.stop_reason
        if stop == "end_turn":
            changed = self.changed()
            text = answer or "(the sub-agent answered nothing)"
            if changed:
                text += "\n\nChanged by the sub-agent: " + ", ".join(changed)
            return self._outcome(
                text + f"\n\n(child session {sid})", error=False, stop=stop, usage=outcome.usage
            )
        why = {
            "max_turn_requests": "used up its tool budget before it answered",
            "cancelled": "was interrupted before it answered",
            "max_tokens": "hit its answer's token limit",
            "refusal": "refused the task",
        }.get(stop, f"stopped ({stop})")
        said = f" Its last words: {answer}" if answer else ""
        return self._outcome(
            f"The child session {sid} {why}; its work so far is kept in that session.{said}",
            error=True,
            stop=stop,
            usage=outcome.usage,
        )

    def _turn(self) -> list[Msg]:
        """The messages of the child's turn (its prompt on)."""
        return self.child.transcript.messages[self.start :]

    def answer(self) -> str:
        """The text of the child's last answer."""
        for message in reversed(self._turn()):
            if message["role"] == "assistant":
                return "".join(
                    str(b.get("text", "")) for b in message["content"] if b.get("type") == "text"
                ).strip()
        return ""

    def changed(self) -> list[str]:
        """What the child's calls changed: the files its edits named, and the commands
        it ran (their effects are in its session)."""
        out: list[str] = []
        for message in self._turn():
            for block in message["content"] if message["role"] == "assistant" else ():
                if block.get("type") != "tool_use":
                    continue
                if block.get("kind") in CHANGING_KINDS:
                    places = block.get("locations") or ()
                    out += [str(place["path"]) for place in places if "path" in place]
                elif block.get("kind") == "execute":
                    command = str((block.get("input") or {}).get("command") or block["name"])
                    out.append(f"$ {command[:80]}")
        return list(dict.fromkeys(out))


def _usable(parent: Session, name: str) -> bool:
    """Whether the parent may call ``name`` now (its mode offers it; ``delegate`` is
    the child's to have or not by its depth)."""
    tool = parent.tools.get(name)
    return tool is not None and (name == DELEGATE or parent.tools.visible(tool))


def _is_mcp(parent: Session, name: str) -> bool:
    from ..tools.mcp import McpTool

    return isinstance(parent.tools.get(name), McpTool)


def _title(task: str) -> str:
    words = " ".join(task.split())
    return f"↳ {words[:70]}" if words else "↳ sub-agent"


def _refused(why: str) -> ToolOutcome:
    return ToolOutcome.text(why, is_error=True)
