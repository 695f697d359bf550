"""Running the tool calls of one answer: which run, in what order, and what each leaves.

The turn hands the runner an answer's calls; the runner answers every one of them
with exactly one stored result, whatever happens: an unknown tool, a repeated or
invalid call, a spent budget, a refusal, a timeout, a failure. Calls that may run
together run in one batch; a call that may not is a barrier. Whether a call may run
at all is asked of one `CallPolicy`: the session's (`HostPolicy`: its mode, its kept
approvals, then the user, `tools/modes.py`), or a test's.

Before an answer is stored, the runner works out what each call would do (an edit's
diff, `preview`): the call's ``tool_use`` block keeps it, so its first ``tool_call``,
its permission request and every replay show it.

What the runner keeps across the rounds of a turn: the tool budget, the calls it has
seen (a model that repeats one gets no tools on its next round), what the model
is to be told once on its next request (`notes`), and the turn's final message once a
call ended the turn with one (`final`: ``ask_user`` to a client that cannot ask).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import anyio

from ..providers.base import ChatMessage, ToolCallFinal, Usage
from ..tools.base import Tool, ToolOutcome, mutates, preview_of
from ..tools.modes import Decision
from ..tools.schema import argument_problem
from . import blocks, events
from .blocks import Block, ToolStatus
from .errors import ToolLoopFailed
from .host import TurnHost
from .images import has_images
from .mutations import MultimodalToolResult, ToolResult

log = logging.getLogger(__name__)

REFUSED = (
    "The user refused permission for this tool call. Do not retry it; "
    "continue without it or ask the user."
)


class CallPolicy(Protocol):
    """Whether a call may run: the one place a permission or mode check goes."""

    async def decide(
        self, tool: Tool, call: ToolCallFinal, shown: Sequence[dict[str, Any]]
    ) -> Decision:
        """``run``, ``confined`` (in the sandbox) or ``refuse`` (``reason`` is what
        the model is told instead of a result). ``shown``: what the call would do."""
        ...


class HostPolicy:
    """The session decides: its mode, its kept approvals, and the user when those
    leave the call open (``TurnHost.authorize``)."""

    def __init__(self, host: TurnHost) -> None:
        self._host = host

    async def decide(
        self, tool: Tool, call: ToolCallFinal, shown: Sequence[dict[str, Any]]
    ) -> Decision:
        return await self._host.authorize(tool, call, shown)


class AskWhenNeeded:
    """A tool that needs permission runs only when ``ask`` allows the call."""

    def __init__(self, ask: Callable[[Tool, ToolCallFinal], Awaitable[bool]]) -> None:
        self._ask = ask

    async def decide(
        self, tool: Tool, call: ToolCallFinal, shown: Sequence[dict[str, Any]]
    ) -> Decision:
        if tool.needs_permission and not await self._ask(tool, call):
            return Decision("refuse", REFUSED)
        return Decision("run")


class ToolRunner:
    def __init__(
        self,
        host: TurnHost,
        turn_id: str,
        *,
        budget: int,
        policy: CallPolicy,
        partial_text: Callable[[], str],
    ) -> None:
        self.host = host
        self.turn_id = turn_id
        self.budget = budget
        self.policy = policy
        self.partial_text = partial_text
        self.tools_off = False
        """Set once the model repeated a call: it is offered no tools again this turn."""
        self.notes: list[ChatMessage] = []
        """What the model is told once, on its next request only (the history never
        has it; clients see the refused call's failed result instead)."""
        self.final: str | None = None
        """The message a call ended the turn with (``ToolOutcome.final_message``): the
        calls after it are not run, and the turn stores it as its last answer."""
        self._seen: set[str] = set()
        self.previews: dict[str, list[dict[str, Any]]] = {}
        """What each call of the latest answer would do (an edit's diff), by call id."""
        self._checkpointed = False
        """The workspace was checkpointed before this turn's first change."""
        self.usage = Usage()
        """Model tokens the turn's calls spent (child sessions), part of the turn's usage."""

    def take_notes(self) -> list[ChatMessage]:
        notes, self.notes = self.notes, []
        return notes

    def _say_once(self, text: str) -> None:
        self.notes.append(ChatMessage("user", text, ephemeral=True))

    async def preview(self, calls: Sequence[ToolCallFinal]) -> None:
        """Work out what each call would do before its answer is stored."""
        self.previews = {}
        for call in calls:
            tool = self.host.tools.get(call.name)
            if tool is not None:
                shown = await preview_of(tool, call.arguments, self.host.tool_context(call.id))
                if shown:
                    self.previews[call.id] = shown

    def describe(self, call: ToolCallFinal) -> Block:
        """The call's ``tool_use`` block, with the title, kind and locations its tool
        gives (a tool that does not exist is shown by its name)."""
        tool = self.host.tools.get(call.name)
        if tool is None:
            return blocks.call_block(
                call.id, call.name, call.arguments, title=call.name, kind="other", locations=[]
            )
        try:
            locations = tool.locations(call.arguments, self.host.tool_context(call.id))
        except Exception:
            locations = []
        try:
            title = tool.title(call.arguments)
        except Exception:
            title = call.name
        return blocks.call_block(
            call.id,
            call.name,
            call.arguments,
            title=title,
            kind=tool.kind,
            locations=locations,
            content=self.previews.get(call.id),
        )

    async def run(
        self, calls: list[ToolCallFinal], shown: list[Block], *, offered: bool, answered: str
    ) -> str | None:
        """Answer every call of one committed answer (``shown``: its ``tool_use`` and
        ``exit_signal`` blocks; ``answered``: its own stop reason); a stop reason ends
        the turn, None goes round again."""
        host = self.host
        part = host.tools.partition(calls)
        # Every call is shown as the answer stored it, refused ones too (their
        # result follows), exactly as session/load replays it.
        for block in shown:
            host.announce(events.ToolCallStarted(block, self.turn_id))
        if part.unknown:
            for call in part.unknown:
                self._answer(call, f"unknown tool {call.name!r}", is_error=True, status="failed")
            names = ", ".join(sorted({c.name for c in part.unknown}))
            raise ToolLoopFailed(
                f"the model called a tool that does not exist: {names}",
                {"reason": "tool_parse_error", "partialText": self.partial_text()},
            )
        if not part.normal:
            return answered if part.exits else "end_turn"
        if not offered:
            # Offered no tools and still called one: answer the calls, end the turn
            # rather than go round again (small models loop here otherwise).
            for call in part.normal:
                self._answer(
                    call, "not run: no tools were available", is_error=True, status="cancelled"
                )
            return "end_turn"
        fresh = self._admit(part.normal)
        runnable = fresh[: max(self.budget, 0)]
        skipped = fresh[len(runnable) :]
        await self._run_batches(runnable)
        self.budget -= len(runnable)
        for call in skipped:
            self._answer(
                call, "not run: the tool budget is exhausted", is_error=True, status="cancelled"
            )
        if self.final is not None:
            return "end_turn"
        if skipped or (self.budget <= 0 and not self.tools_off and fresh):
            return "max_turn_requests"
        return None

    def _admit(self, calls: list[ToolCallFinal]) -> list[ToolCallFinal]:
        """The calls worth running: a repeated call or one with invalid arguments is
        answered with why, and the model told on its next request."""
        fresh: list[ToolCallFinal] = []
        for call in calls:
            key = call.name + json.dumps(call.arguments, sort_keys=True)
            if key in self._seen:
                self._answer(
                    call,
                    "Not run: already called with these arguments; use the earlier result.",
                    status="failed",
                )
                if not self.tools_off:
                    self._say_once(
                        f"You already called {call.name} with these arguments. No more tool "
                        "calls in this turn: answer the user now from the results above."
                    )
                self.tools_off = True
                continue
            tool = self.host.tools.get(call.name)
            problem = argument_problem(tool, call.arguments)
            if tool is not None and problem is not None:
                self._answer(call, f"invalid arguments: {problem}", is_error=True, status="failed")
                self._say_once(
                    f"Your call to {call.name} was not run: {problem}. Call it again with "
                    f"arguments that match its schema: {json.dumps(tool.parameters)}"
                )
                continue
            self._seen.add(key)
            fresh.append(call)
        return fresh

    def _record(self, call: ToolCallFinal, outcome: ToolOutcome, status: ToolStatus) -> None:
        """Store the call's one result, then show it finished."""
        block = blocks.result_block(
            call.id,
            call.name,
            outcome.content,
            is_error=outcome.is_error,
            status=status,
            compact_summary=outcome.compact_summary,
            raw_output=outcome.raw_output,
            display=outcome.display,
            plan=outcome.plan,
            child_session_id=outcome.child_session_id,
        )
        if outcome.usage is not None:
            self.usage += outcome.usage
        message = blocks.tool_message(self.turn_id, block)
        if has_images(outcome.content):
            result: ToolResult = MultimodalToolResult.holding(message)
        else:
            result = ToolResult(message)
        self.host.commit((result,))
        self.host.announce(events.ToolFinished(result.message["content"][0]))

    def _answer(
        self, call: ToolCallFinal, text: str, *, status: ToolStatus, is_error: bool = False
    ) -> None:
        """A result the engine writes itself (refused, skipped, invalid…): the call
        never ran, and is shown finished, with why."""
        self._record(call, ToolOutcome.text(text, is_error=is_error), status)

    async def _run_batches(self, calls: list[ToolCallFinal]) -> None:
        """Parallelizable calls run together; a non-parallelizable call is a barrier."""
        batch: list[ToolCallFinal] = []
        for call in calls:
            tool = self.host.tools.get(call.name)
            if tool is not None and tool.parallelizable:
                batch.append(call)
                continue
            await self._run_batch(batch)
            batch = []
            await self._run_batch([call])
        await self._run_batch(batch)

    async def _run_batch(self, batch: list[ToolCallFinal]) -> None:
        """A batch that may change files is checkpointed around (`TurnHost.checkpoint`):
        before the turn's first such batch, and after each, even one interrupted."""
        if not batch:
            return
        if self.final is not None:  # a call before these ended the turn
            for call in batch:
                self._answer(call, "not run: the turn ended with a question", status="cancelled")
            return
        tools = [self.host.tools.get(c.name) for c in batch]
        if not any(t is not None and mutates(t) for t in tools):
            await self._run_batch_now(batch)
            return
        if not self._checkpointed:
            self._checkpointed = True
            await self.host.checkpoint("before")
        try:
            await self._run_batch_now(batch)
        finally:
            with anyio.CancelScope(shield=True):
                await self.host.checkpoint("after")

    async def _run_batch_now(self, batch: list[ToolCallFinal]) -> None:
        outcomes: dict[str, tuple[ToolOutcome, ToolStatus]] = {}
        if len(batch) == 1:
            outcomes[batch[0].id] = await self._run_one(batch[0])
        else:
            async with anyio.create_task_group() as tg:
                for call in batch:

                    async def one(c: ToolCallFinal = call) -> None:
                        outcomes[c.id] = await self._run_one(c)

                    tg.start_soon(one)
        # Results are committed in call order, whatever order they finished in.
        failures: list[str] = []
        for call in batch:
            outcome, status = outcomes[call.id]
            self._record(call, outcome, status)
            if outcome.final_message is not None and self.final is None:
                self.final = outcome.final_message
            if outcome.is_error and status == "failed":
                failures.append(f"{call.name}: {_first_text(outcome)}")
        if failures and self.host.config.strict_tools:
            raise ToolLoopFailed(
                "a tool failed: " + "; ".join(failures),
                {"reason": "tool_execution_error", "partialText": self.partial_text()},
            )

    async def _run_one(self, call: ToolCallFinal) -> tuple[ToolOutcome, ToolStatus]:
        host = self.host
        tool = host.tools.get(call.name)
        assert tool is not None
        decision = await self.policy.decide(tool, call, self.previews.get(call.id, []))
        if decision.action == "refuse":
            return ToolOutcome.text(decision.reason, is_error=True), "failed"
        ctx = host.tool_context(call.id, confined=decision.action == "confined")
        host.announce(events.ToolProgress(call.id))
        try:
            with anyio.fail_after(tool.timeout):
                outcome = await tool.run(call.arguments, ctx)
        except TimeoutError:
            return (
                ToolOutcome.text(f"{call.name} timed out after {tool.timeout:g} s", is_error=True),
                "failed",
            )
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            log.info("tool %s failed: %s", call.name, exc)
            return ToolOutcome.text(f"{call.name} failed: {exc}", is_error=True), "failed"
        return outcome, "failed" if outcome.is_error else "completed"


def _first_text(outcome: ToolOutcome) -> str:
    for c in outcome.content:
        if c.get("type") == "text":
            return str(c.get("text", ""))[:200]
    return ""
