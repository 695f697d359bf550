"""One prompt turn: the agentic loop from the user's message to a stop reason.

The loop streams a model call, commits the assistant message, runs the normal tool
calls it asked for, and goes round again until the model answers, the budget runs
out, or the turn is interrupted or fails. Whatever happens, the transcript stays
structurally valid: every ``tool_use`` gets exactly one result, and a partial answer
is kept as a truncated message.

Deltas reach the client in *bursts*: the loop drains every provider event that is
ready, journals the burst in one commit, then announces it as one coalesced chunk
per block. That is what keeps per-token cost low and what a crash can recover.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ..providers.base import (
    ChatMessage,
    ChatRequest,
    Done,
    Provider,
    ProviderError,
    ProviderEvent,
    StatusNotice,
    TextDelta,
    ThoughtDelta,
    ToolCallDelta,
    ToolCallFinal,
    Usage,
)
from ..store.base import StoreError
from ..tools.base import ToolOutcome, preview_of
from ..tools.schema import argument_problem
from ..tools.selection import offer_meta
from . import blocks, compactor, events
from .errors import ContextTooLarge, ProviderFailed, ToolLoopFailed
from .host import TurnHost
from .ids import new_id, now_iso
from .loopguard import RepeatedLineDetector
from .mutations import (
    AssistantMessage,
    AssistantTruncated,
    Msg,
    Mutation,
    ToolResult,
    UserMessage,
)
from .toolcalls import parse_fallback_call
from .transcript import cancelled_results

log = logging.getLogger(__name__)

BURST_MAX = 512
"""Most provider events handled before a burst is committed and announced."""

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "refusal": "refusal"}


@dataclass(slots=True)
class _Stream:
    """The assistant message being streamed (not yet a mutation)."""

    message_id: str
    text: list[str] = field(default_factory=list)
    thoughts: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ToolCallFinal] = field(default_factory=list)
    usage: Usage | None = None
    finish: str = "stop"
    error: ProviderError | None = None
    pending: list[tuple[str, str]] = field(default_factory=list)
    loop_detected: bool = False
    streamed: str | None = None
    """The text as it streamed, when a call written in it was taken out afterwards."""

    def full_text(self) -> str:
        return "".join(self.text)

    def content(
        self,
        *,
        with_calls: bool = True,
        exit_names: frozenset[str] = frozenset(),
        describe: Callable[[ToolCallFinal], dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """Thoughts, text, then calls; exit calls become ``exit_signal`` blocks, which
        are never sent back to the model as calls and need no result. ``describe``
        gives the ``tool_use`` block of a call, with what the client is shown of it."""
        out: list[dict[str, Any]] = list(self.thoughts)
        text = self.full_text()
        if self.streamed is not None:
            out.append(blocks.text_block(text, streamed=self.streamed))
        elif text:
            out.append({"type": "text", "text": text})
        if with_calls:
            for c in self.calls:
                if c.name in exit_names:
                    out.append(
                        {
                            "type": "exit_signal",
                            "id": c.id,
                            "name": c.name,
                            "arguments": c.arguments,
                        }
                    )
                elif describe is not None:
                    out.append(describe(c))
                else:
                    out.append(
                        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                    )
        return out


class Turn:
    """Runs against a `TurnHost` (the session, or a test's fake), never the session
    itself: what the loop may do to a session is exactly what the host offers."""

    def __init__(self, host: TurnHost, prompt: list[dict[str, Any]]) -> None:
        self.host = host
        self.config = host.config
        self.prompt = prompt
        self.number = host.transcript.turn_number + 1
        self.turn_id = f"a{self.number}"
        self.scope: anyio.CancelScope | None = None
        self.done = anyio.Event()
        self.stream: _Stream | None = None
        self.totals = Usage()
        self.budget = self.config.tool_budget
        self.produced: list[str] = []
        self.last_message_id: str | None = None
        self.user_message_id: str | None = None
        self._seen_calls: set[str] = set()
        self._tools_off = False
        self._offered_tools = True
        self._offers: list[dict[str, Any]] = []
        self._ephemeral: list[ChatMessage] = []
        self._call_blocks: list[dict[str, Any]] = []
        """The ``tool_use`` and ``exit_signal`` blocks of the last committed answer."""
        self._previews: dict[str, list[dict[str, Any]]] = {}
        """What each call of the last answer would do (an edit's diff), by call id."""
        # A provider reports usage at the end of a stream; an interrupt ends it before
        # that, and its usage is then estimated: the request's size, one token a piece.
        self._unreported: tuple[int, int] | None = None
        self._request_tokens = 0

    # -- committing -------------------------------------------------------------------

    def _message(self, role: str, content: list[dict[str, Any]], **extra: Any) -> Msg:
        turn = f"u{self.number}" if role == "user" else self.turn_id
        msg: Msg = {
            "messageId": new_id("msg"),
            "turnId": turn,
            "role": role,
            "content": content,
            "createdAt": now_iso(),
        }
        msg.update({k: v for k, v in extra.items() if v is not None})
        return msg

    def _commit(self, *mutations: Mutation, end_stream: bool = False) -> None:
        self.host.commit(mutations, end_stream=end_stream)

    # -- the loop -----------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        """The turn's answer; an interrupt (`cancel`) ends it with ``cancelled``, after
        what it left is recorded."""
        try:
            with anyio.CancelScope() as scope:
                self.scope = scope
                return await self._loop()
            return self.cancelled_result()
        finally:
            self.done.set()

    def cancel(self) -> bool:
        """Interrupt the turn; False when it has not started."""
        if self.scope is None:
            return False
        self.scope.cancel()
        return True

    async def _loop(self) -> dict[str, Any]:
        try:
            message = self._message("user", self.prompt)
            self.user_message_id = message["messageId"]
            self._refuse_oversize(await self.host.provider(), message)
            self._commit(UserMessage(message))
            self.host.maybe_title(self.prompt)
            while True:
                stream = await self._model_call()
                if stream.loop_detected:
                    raise ToolLoopFailed(
                        "the model repeated the same line over and over; generation stopped",
                        {"reason": "repeated_line_loop", "partialText": self.partial_text()},
                    )
                if not stream.calls:
                    return self._result(STOP_REASONS.get(stream.finish, "end_turn"))
                stop = await self._handle_calls(stream)
                if stop is not None:
                    return self._result(stop)
        except anyio.get_cancelled_exc_class():
            self._abort("cancelled by the user")
            raise
        except BaseException as exc:
            self._abort(f"not finished: {exc}")
            raise

    def partial_text(self) -> str:
        return "".join(self.produced)

    def _result(self, stop_reason: str) -> dict[str, Any]:
        return {
            "stopReason": stop_reason,
            "usage": self.totals.wire(),
            "_meta": {
                "threadline": {
                    "turnId": self.turn_id,
                    "messageId": self.last_message_id,
                    "toolOffers": self._offers,
                    "userMessageId": self.user_message_id,
                }
            },
        }

    def cancelled_result(self) -> dict[str, Any]:
        if self._unreported is not None:
            self.totals += Usage(*self._unreported)
            self._unreported = None
        return self._result("cancelled")

    # -- model calls --------------------------------------------------------------------

    def _request(self, provider: Provider) -> ChatRequest:
        request = self.host.compile_request(
            budget=self.budget,
            tools_off=self._tools_off or self.budget <= 0,
            ephemeral=self._ephemeral,
            context_window=provider.context_window,
        )
        self._offered_tools = bool(request.tools)
        return request

    def _refuse_oversize(self, provider: Provider, message: Msg) -> None:
        """Refuse input that cannot fit before it is stored: once committed, it would
        be part of every later request, and every later prompt would be refused too."""
        host = self.host
        window = provider.context_window

        def needs(working: list[Msg]) -> int:
            request = host.compile_request(
                budget=self.budget, context_window=window, working=working
            )
            return provider.count_tokens(request)

        alone = needs([message])
        if alone > window:
            raise ContextTooLarge(
                f"the prompt needs {alone} tokens but the model's context holds {window}; "
                "nothing was stored: send a shorter prompt or smaller attachments",
                {"used": alone, "size": window, "stored": False},
            )
        if host.compaction_limit(provider) is None:
            used = needs([*host.transcript.working(), message])
            if used > window:
                raise ContextTooLarge(
                    f"with the session's history the prompt needs {used} tokens but the "
                    f"model's context holds {window}, and auto-compaction is off; nothing "
                    "was stored: compact the session first (session/compact; keepTurns 0 "
                    "summarises every turn)",
                    {"used": used, "size": window, "stored": False},
                )

    def _say_once(self, text: str) -> None:
        """Tell the model something for its next request only; the history never has
        it. Clients are not sent it: they see the refused call's failed result."""
        self._ephemeral.append(ChatMessage("user", text, ephemeral=True))

    async def _fitting_request(self, provider: Provider) -> ChatRequest:
        """The next request, compacted first when it passes the session's threshold."""
        request = self._request(provider)
        used = provider.count_tokens(request)
        limit = self.host.compaction_limit(provider)
        if limit is not None and used > limit:
            for keep in (2, 1):
                result = await compactor.compact(
                    self.host, instructions=None, keep_turns=keep, turn_id=self.turn_id
                )
                if result["summary"]:
                    break
            request = self._request(provider)
            used = provider.count_tokens(request)
        if used > provider.context_window:
            raise ContextTooLarge(
                f"the prompt needs {used} tokens but the model's context holds "
                f"{provider.context_window}, even after compaction",
                {"used": used, "size": provider.context_window},
            )
        self._request_tokens = used
        return request

    async def _model_call(self) -> _Stream:
        host = self.host
        provider = await host.provider()
        request = await self._fitting_request(provider)
        self._offers.append(offer_meta(request.tools, host.tools))
        self._ephemeral = []
        self._unreported = (self._request_tokens, 0)
        stream = _Stream(new_id("msg"))
        self.stream = stream
        host.journal.begin(stream.message_id, {"turnId": self.turn_id, "model": provider.model_id})
        guard = RepeatedLineDetector()
        send, recv = anyio.create_memory_object_stream[ProviderEvent](max_buffer_size=BURST_MAX)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_produce, provider, request, send)
            async with recv:
                ended = False
                while not ended:
                    try:
                        event = await recv.receive()
                    except anyio.EndOfStream:
                        break
                    self._on_event(stream, event, guard)
                    for _ in range(BURST_MAX):
                        try:
                            event = recv.receive_nowait()
                        except anyio.WouldBlock:
                            break
                        except anyio.EndOfStream:
                            ended = True
                            break
                        self._on_event(stream, event, guard)
                    self._flush(stream)
                    if stream.loop_detected or stream.error is not None:
                        tg.cancel_scope.cancel()
                        break
        self._flush(stream)
        if stream.usage is not None:
            self.totals += stream.usage
            host.announce(
                events.Usage(
                    stream.usage.input_tokens + stream.usage.output_tokens,
                    provider.context_window,
                )
            )
        if not stream.calls and stream.error is None and self._offered_tools:
            self._fallback_calls(stream)
        if stream.error is not None or stream.loop_detected:
            if stream.content(with_calls=False):
                self._commit_stream(stream, truncated=True)
            else:  # nothing came back (no API key…): no empty reply is stored
                self.stream = None
                host.journal.clear()
            if stream.error is not None:
                err = stream.error
                raise ProviderFailed(
                    f"model call failed: {err.message}",
                    {
                        "reason": err.reason,
                        "status": err.status,
                        "retryable": err.retryable,
                        "partialText": self.partial_text(),
                    },
                )
            return stream
        self._previews = await self._preview(stream.calls)
        self._commit_stream(stream, truncated=False)
        return stream

    def _on_event(self, stream: _Stream, event: ProviderEvent, guard: RepeatedLineDetector) -> None:
        if isinstance(event, TextDelta):
            if not event.text:
                return
            if self._unreported is not None:
                self._unreported = (self._unreported[0], self._unreported[1] + 1)
            stream.text.append(event.text)
            self.produced.append(event.text)
            stream.pending.append(("text", event.text))
            if guard.feed(event.text):
                stream.loop_detected = True
        elif isinstance(event, ThoughtDelta):
            last = stream.thoughts[-1] if stream.thoughts else None
            if last is not None and last.get("signature") is None and not event.extra:
                last["text"] += event.text
                if event.signature is not None:
                    last["signature"] = event.signature
            else:
                block: dict[str, Any] = {"type": "thought", "text": event.text}
                if event.signature is not None:
                    block["signature"] = event.signature
                if event.extra:
                    block.update(event.extra)
                stream.thoughts.append(block)
            if event.text:
                stream.pending.append(("thought", event.text))
        elif isinstance(event, ToolCallFinal):
            # The wire promises tool call ids unique for ever; providers reuse theirs
            # (across sessions, restarts, even within one answer), so the engine mints
            # its own and sends those back to the provider in the continuation.
            stream.calls.append(replace(event, id=new_id("call")))
        elif isinstance(event, Usage):
            stream.usage = event
            self._unreported = None
        elif isinstance(event, Done):
            stream.finish = event.finish_reason
        elif isinstance(event, ProviderError):
            stream.error = event
        elif isinstance(event, StatusNotice):
            self.host.announce(events.SessionInfo(now_iso(), status=event.message))
        elif isinstance(event, ToolCallDelta):  # pyright: ignore[reportUnnecessaryIsInstance]
            pass

    def _flush(self, stream: _Stream) -> None:
        """Journal the burst in one commit, then announce it coalesced per block."""
        if not stream.pending:
            return
        runs: list[tuple[str, str]] = []
        kind, buf = stream.pending[0][0], [stream.pending[0][1]]
        for k, text in stream.pending[1:]:
            if k == kind:
                buf.append(text)
                continue
            runs.append((kind, "".join(buf)))
            kind, buf = k, [text]
        runs.append((kind, "".join(buf)))
        stream.pending.clear()
        # One journal row per run, exactly what is announced.
        self.host.journal.append(runs)
        for kind, text in runs:
            self.host.announce(
                events.MessageChunk(stream.message_id, self.turn_id, text, kind == "thought")
            )

    def _fallback_calls(self, stream: _Stream) -> None:
        """A text-only model may write a call as JSON; take it and strip it from the answer."""
        text = stream.full_text()
        parsed = parse_fallback_call(text)
        if parsed is None:
            return
        call, remaining = parsed
        stream.calls.append(call)
        stream.streamed = text
        stream.text = [remaining] if remaining else []

    def _commit_stream(self, stream: _Stream, *, truncated: bool) -> None:
        provider_model = self.config.model
        usage = stream.usage
        msg = self._message(
            "assistant",
            stream.content(
                with_calls=not truncated,
                exit_names=self.host.tools.exit_names,
                describe=self._describe,
            ),
            model=provider_model,
            usage=usage.wire() if usage else None,
            stopReason=None if truncated else STOP_REASONS.get(stream.finish, "end_turn"),
            truncated=True if truncated else None,
            error=stream.error.message if stream.error else None,
        )
        msg["messageId"] = stream.message_id
        mutation = AssistantTruncated(msg) if truncated else AssistantMessage(msg)
        self._commit(mutation, end_stream=True)
        self._call_blocks = [
            b for b in msg["content"] if b.get("type") in ("tool_use", "exit_signal")
        ]
        self.stream = None
        self.last_message_id = stream.message_id

    # -- tools --------------------------------------------------------------------------

    async def _handle_calls(self, stream: _Stream) -> str | None:
        """Run the calls of one assistant message; a stop reason ends the turn."""
        host = self.host
        part = host.tools.partition(stream.calls)
        # Every call is shown as the answer stored it, refused ones too (their
        # result follows), exactly as session/load replays it.
        for block in self._call_blocks:
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
            return STOP_REASONS.get(stream.finish, "end_turn") if part.exits else "end_turn"
        if not self._offered_tools:
            # Offered no tools and still called one: answer the calls, end the turn
            # rather than go round again (small models loop here otherwise).
            for call in part.normal:
                self._answer(
                    call, "not run: no tools were available", is_error=True, status="cancelled"
                )
            return "end_turn"
        # A model that repeats an identical call gets no tools on its next round,
        # so it has to answer from the results it already has.
        fresh: list[ToolCallFinal] = []
        for call in part.normal:
            key = call.name + json.dumps(call.arguments, sort_keys=True)
            if key in self._seen_calls:
                self._answer(
                    call,
                    "Not run: already called with these arguments; use the earlier result.",
                    status="failed",
                )
                if not self._tools_off:
                    self._say_once(
                        f"You already called {call.name} with these arguments. No more tool "
                        "calls in this turn: answer the user now from the results above."
                    )
                self._tools_off = True
                continue
            tool = host.tools.get(call.name)
            problem = argument_problem(tool, call.arguments)
            if tool is not None and problem is not None:
                self._answer(call, f"invalid arguments: {problem}", is_error=True, status="failed")
                self._say_once(
                    f"Your call to {call.name} was not run: {problem}. Call it again with "
                    f"arguments that match its schema: {json.dumps(tool.parameters)}"
                )
                continue
            self._seen_calls.add(key)
            fresh.append(call)
        runnable = fresh[: max(self.budget, 0)]
        skipped = fresh[len(runnable) :]
        await self._run_batches(runnable)
        self.budget -= len(runnable)
        for call in skipped:
            self._answer(
                call, "not run: the tool budget is exhausted", is_error=True, status="cancelled"
            )
        if skipped or (self.budget <= 0 and not self._tools_off and fresh):
            return "max_turn_requests"
        return None

    def _answer(
        self, call: ToolCallFinal, text: str, *, status: str, is_error: bool = False
    ) -> None:
        """Commit a result the engine writes itself (refused, skipped, invalid…), and
        show the call that never ran, with why, as one finished tool call."""
        outcome = ToolOutcome.text(text, is_error=is_error)
        result = self._tool_result(call, outcome, status=status)
        self._commit(ToolResult(result))
        self.host.announce(events.ToolFinished(result["content"][0]))

    def _tool_result(self, call: ToolCallFinal, outcome: ToolOutcome, *, status: str) -> Msg:
        block: dict[str, Any] = {
            "type": "tool_result",
            "toolUseId": call.id,
            "toolName": call.name,
            "content": outcome.content,
            "isError": outcome.is_error,
            "status": status,
        }
        if outcome.compact_summary:
            block["compactSummary"] = outcome.compact_summary
        if outcome.raw_output is not None:
            block["rawOutput"] = outcome.raw_output
        if outcome.display:
            block["display"] = outcome.display
        if outcome.plan is not None:
            block["plan"] = outcome.plan
        return self._message("tool", [block])

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
        if not batch:
            return
        outcomes: dict[str, tuple[ToolOutcome, str]] = {}
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
            result = self._tool_result(call, outcome, status=status)
            self._commit(ToolResult(result))
            self.host.announce(events.ToolFinished(result["content"][0]))
            if outcome.is_error and status == "failed":
                failures.append(f"{call.name}: {_first_text(outcome)}")
        if failures and self.config.strict_tools:
            raise ToolLoopFailed(
                "a tool failed: " + "; ".join(failures),
                {"reason": "tool_execution_error", "partialText": self.partial_text()},
            )

    async def _preview(self, calls: list[ToolCallFinal]) -> dict[str, list[dict[str, Any]]]:
        """What each call would do, worked out before the answer is stored, so its
        first ``tool_call`` and its permission request show it (an edit's diff)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for call in calls:
            tool = self.host.tools.get(call.name)
            if tool is not None:
                shown = await preview_of(tool, call.arguments, self.host.tool_context(call.id))
                if shown:
                    out[call.id] = shown
        return out

    def _describe(self, call: ToolCallFinal) -> dict[str, Any]:
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
            content=self._previews.get(call.id),
        )

    async def _run_one(self, call: ToolCallFinal) -> tuple[ToolOutcome, str]:
        host = self.host
        tool = host.tools.get(call.name)
        assert tool is not None
        decision = await host.authorize(tool, call, self._previews.get(call.id, ()))
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

    # -- aborts -----------------------------------------------------------------------

    def snapshot(self) -> list[Mutation]:
        """What this turn would leave if interrupted now, for a fork to record. New
        message ids: the parent may still finish these messages under their own."""
        out: list[Mutation] = []
        stream = self.stream
        if stream is not None:
            out.append(
                AssistantTruncated(
                    self._message(
                        "assistant",
                        stream.content(with_calls=False),
                        model=self.config.model,
                        truncated=True,
                        error="forked while the answer was streaming",
                    )
                )
            )
        out.extend(
            cancelled_results(self.host.transcript, "not finished when forked", self.turn_id)
        )
        return out

    def _abort(self, reason: str) -> None:
        """Record what an interrupt or failure left behind. Synchronous: it must run
        even while the task is being cancelled."""
        host = self.host
        mutations: list[Mutation] = []
        stream = self.stream
        if stream is not None:
            self.stream = None
            msg = self._message(
                "assistant",
                stream.content(with_calls=False),
                model=self.config.model,
                truncated=True,
                error=reason,
            )
            msg["messageId"] = stream.message_id
            mutations.append(AssistantTruncated(msg))
            self.last_message_id = stream.message_id
        cancelled = cancelled_results(host.transcript, reason, self.turn_id)
        mutations.extend(cancelled)
        if mutations:
            try:
                self._commit(*mutations, end_stream=True)
            except StoreError as exc:
                # The journal still holds what was shown; the next turn stores it.
                log.warning("could not record the aborted turn of %s yet: %s", host.id, exc)
            except Exception:
                log.exception("could not record the aborted turn of %s", host.id)
        elif stream is not None:
            host.journal.clear()
        for result in cancelled:
            host.announce(events.ToolFinished(result.message["content"][0]))


def _first_text(outcome: ToolOutcome) -> str:
    for c in outcome.content:
        if c.get("type") == "text":
            return str(c.get("text", ""))[:200]
    return ""


async def _produce(
    provider: Provider, request: ChatRequest, send: MemoryObjectSendStream[ProviderEvent]
) -> None:
    """Pump provider events into the turn's buffer without a scheduler round trip per event."""
    async with send:
        try:
            events: AsyncIterator[ProviderEvent] = provider.stream(request)
            async with aclosing(events):  # type: ignore[type-var]
                async for event in events:
                    try:
                        send.send_nowait(event)
                    except anyio.WouldBlock:
                        await send.send(event)
        except anyio.get_cancelled_exc_class():
            raise
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return
        except Exception as exc:
            log.exception("provider %s failed", provider.model_id)
            err = ProviderError("provider_exception", f"{type(exc).__name__}: {exc}")
            try:
                send.send_nowait(err)
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await send.send(err)
