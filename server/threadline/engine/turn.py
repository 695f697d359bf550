"""One prompt turn: the agentic loop from the user's message to a stop reason.

The loop reads: compile a request → stream the answer → commit it → run its tool
calls → repeat, until the model answers, the budget runs out, or the turn is
interrupted or fails. Whatever happens, the transcript stays structurally valid:
every ``tool_use`` gets exactly one result (`toolrunner.py`), and a partial answer is
kept as a truncated message (`unfinished.py`). How an answer streams (bursts,
journal, assembly) is `stream.py`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio

from ..providers.base import ChatRequest, Provider, ProviderEvent, StatusNotice, Usage
from ..store.base import StoreError
from ..tools.selection import offer_meta
from . import blocks, events
from .blocks import Block
from .compactor import Compaction
from .errors import ContextTooLarge, ProviderFailed, ToolLoopFailed
from .host import TurnHost
from .ids import now_iso
from .mutations import (
    AssistantMessage,
    AssistantTruncated,
    Msg,
    Mutation,
    ToolCancelled,
    UserMessage,
)
from .outcomes import TurnOutcome
from .stream import Answer, read_bursts, stop_reason
from .tasks import Work
from .toolrunner import CallPolicy, HostPolicy, ToolRunner
from .unfinished import FORKED, PartialAnswer, Why, stopped, unfinished

log = logging.getLogger(__name__)


class Turn:
    """Runs against a `TurnHost` (the session, or a test's fake), never the session
    itself: what the loop may do to a session is exactly what the host offers. A
    `tasks.SessionTask`: run it through a `tasks.RunningTask` to stop it."""

    work = Work.TURN

    def __init__(
        self,
        host: TurnHost,
        prompt: list[Block],
        *,
        policy: CallPolicy | None = None,
        message_id: str | None = None,
        show: bool = False,
    ) -> None:
        self.host = host
        self.prompt = prompt
        self.message_id = message_id
        """The id the prompt is stored under (a queued prompt keeps the one it waited under)."""
        self.show = show
        """Its sender leaves showing it to the server (it was sent to steer or queue, and
        found the session idle): it is shown as a queued prompt is when its turn starts."""
        self.joined: list[str] = []
        """Steering prompts that joined this turn (their requests answer with its end)."""
        self.policy = policy or HostPolicy(host)
        self.lease_turn_id: str | None = f"a{host.transcript.turn_number + 1}"
        self.answer: Answer | None = None
        """The answer streaming now (none between model calls)."""
        self.totals = Usage()
        self.last_message_id: str | None = None
        self.user_message_id: str | None = None
        self.on_stored: Callable[[str], None] | None = None
        """Told the prompt's message id once it is stored (its sender's acceptance)."""
        self._answers: list[Answer] = []
        self._offers: list[dict[str, object]] = []
        self._offered_tools = True
        # A provider reports usage at the end of a stream; an interrupt ends it before
        # that, and its usage is then estimated: the request's size, one token a piece.
        self._last_call: tuple[int, Answer] | None = None
        self._request_tokens = 0
        self._shown_calls: list[Block] = []
        """The ``tool_use`` and ``exit_signal`` blocks of the last committed answer."""
        self._begin()

    def _begin(self) -> None:
        """Number the turn and read its options as the session has them now (a turn
        is made once its lease has caught the session up)."""
        host = self.host
        self.number = host.transcript.turn_number + 1
        self.turn_id = f"a{self.number}"
        self.config = host.config
        self.tools = ToolRunner(
            host,
            self.turn_id,
            budget=self.config.tool_budget,
            policy=self.policy,
            partial_text=self.partial_text,
        )

    # -- the loop -----------------------------------------------------------------------

    async def run(self) -> TurnOutcome:
        """The turn's outcome; stopped by its `RunningTask`, it records what it left
        and `cancelled` is the outcome."""
        self._begin()
        try:
            await self._open()
            while True:
                self._between_calls()
                provider = await self.host.provider()
                request = await self._compile(provider)
                answer = await self._stream(provider, request)
                if not answer.stopped:
                    await self.tools.preview(answer.calls)
                self._commit(answer)
                if not answer.calls:
                    if answer.finish != "stop" or not self._between_calls():
                        return self._outcome(stop_reason(answer.finish))
                    continue  # steered as it answered: the model answers that too
                stop = await self.tools.run(
                    answer.calls,
                    self._shown_calls,
                    offered=self._offered_tools,
                    answered=stop_reason(answer.finish),
                )
                if self.tools.final is not None:
                    self._say(self.tools.final)
                if stop is not None:
                    return self._outcome(stop)
        except anyio.get_cancelled_exc_class():
            self._abort("cancelled by the user")
            raise
        except BaseException as exc:
            self._abort(f"not finished: {exc}")
            raise

    async def _open(self) -> None:
        """Refuse a prompt that cannot fit, then store it and title the session."""
        message = blocks.user_message(self.number, self.prompt, self.message_id)
        self.user_message_id = message["messageId"]
        self._refuse_oversize(await self.host.provider(), message)
        mutation = UserMessage.holding(message)
        message = mutation.message
        self.host.commit((mutation,))
        self.host.announce(events.PromptStored(message))
        if self.on_stored is not None:
            self.on_stored(message["messageId"])
        if self.message_id is not None or self.show:
            # A queued prompt (its sender saw it wait, not start), or a steer that came
            # after the work ended: every window's user message, its sender's too.
            self.host.show_prompt(message)
        self.host.maybe_title(self.prompt)

    def _between_calls(self) -> bool:
        """Take in the prompts sent to steer this turn, before its next model call:
        after a tool batch's results (never inside one), or after an answer that would
        have ended the turn. Each is stored as a user message of this turn under the id
        it was shown with while it waited. True when any joined."""
        joined = self.host.take_steering(self.turn_id)
        if not joined:
            return False
        for message_id, content in joined:
            mutation = UserMessage.holding(blocks.user_message(self.number, content, message_id))
            message = mutation.message
            self.host.commit((mutation,))
            self.host.show_prompt(message)
            self.joined.append(message_id)
        return True

    def partial_text(self) -> str:
        return "".join(d for a in self._answers for d in a.deltas)

    def _outcome(self, stop: str) -> TurnOutcome:
        return TurnOutcome(
            stop_reason=stop,
            usage=self.totals + self.tools.usage,
            turn_id=self.turn_id,
            message_id=self.last_message_id,
            user_message_id=self.user_message_id,
            tool_offers=list(self._offers),
        )

    def cancelled(self) -> TurnOutcome:
        last = self._last_call
        if last is not None and last[1].usage is None:
            self.totals += Usage(last[0], len(last[1].deltas))
            self._last_call = None
        return self._outcome("cancelled")

    # -- compile ------------------------------------------------------------------------

    def _request(self, provider: Provider) -> ChatRequest:
        request = self.host.compile_request(
            budget=self.tools.budget,
            tools_off=self.tools.tools_off or self.tools.budget <= 0,
            ephemeral=self.tools.notes,
            context_window=provider.context_window,
        )
        self._offered_tools = bool(request.tools)
        return request

    async def _compile(self, provider: Provider) -> ChatRequest:
        """The next request, compacted first when it passes the session's threshold."""
        request = self._request(provider)
        used = provider.count_tokens(request)
        limit = self.host.compaction_limit(provider)
        if limit is not None and used > limit:
            for keep in (2, 1):
                done = await Compaction(self.host, None, keep, turn_id=self.turn_id).run()
                if done.summary:
                    break
            request = self._request(provider)
            used = provider.count_tokens(request)
        if used > provider.context_window:
            raise ContextTooLarge(
                f"the prompt needs {used} tokens but the model's context holds "
                f"{provider.context_window}, even after compaction",
                {"used": used, "size": provider.context_window},
            )
        self._offers.append(offer_meta(request.tools, self.host.tools))
        self.tools.take_notes()
        self._request_tokens = used
        return request

    def _refuse_oversize(self, provider: Provider, message: Msg) -> None:
        """Refuse input that cannot fit before it is stored: once committed, it would
        be part of every later request, and every later prompt would be refused too."""
        host = self.host
        window = provider.context_window

        def needs(working: list[Msg]) -> int:
            request = host.compile_request(
                budget=self.tools.budget, context_window=window, working=working
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

    # -- stream -------------------------------------------------------------------------

    async def _stream(self, provider: Provider, request: ChatRequest) -> Answer:
        """Stream one answer: each burst journaled, then announced."""
        host = self.host
        answer = Answer()
        self.answer = answer
        self._answers.append(answer)
        self._last_call = (self._request_tokens, answer)
        host.journal.begin(answer.message_id, {"turnId": self.turn_id, "model": provider.model_id})

        async def on_burst(burst: list[ProviderEvent]) -> bool:
            for event in burst:
                if isinstance(event, StatusNotice):
                    host.announce(events.SessionInfo(now_iso(), status=event.message))
                else:
                    answer.take(event)
            await self._flush(answer)
            return answer.stopped

        await read_bursts(provider, request, on_burst)
        await self._flush(answer)
        if answer.usage is not None:
            self.totals += answer.usage
            used = answer.usage.input_tokens + answer.usage.output_tokens
            call = (self.config.model, answer.usage.input_tokens, answer.usage.output_tokens)
            cost = host.cost(call)
            host.announce(events.Usage(used, provider.context_window, cost))
        if not answer.calls and answer.error is None and self._offered_tools:
            answer.take_written_call()
        return answer

    async def _flush(self, answer: Answer) -> None:
        """Journal the burst in one commit, then announce it coalesced per block."""
        runs = answer.runs()
        if not runs:
            return
        await self.host.journal.append(runs)  # one journal row per run, exactly what is announced
        for kind, text in runs:
            self.host.announce(
                events.MessageChunk(answer.message_id, self.turn_id, text, kind == "thought")
            )

    # -- commit -------------------------------------------------------------------------

    def _commit(self, answer: Answer) -> None:
        """Store the answer; one that failed or looped is kept truncated (unless
        nothing came back) and ends the turn."""
        if not answer.stopped:
            self._store(answer, truncated=False)
            return
        if answer.content(with_calls=False):
            self._store(answer, truncated=True)
        else:  # nothing came back (no API key…): no empty reply is stored
            self.answer = None
            self.host.journal.clear()
        if answer.error is not None:
            err = answer.error
            raise ProviderFailed(
                f"model call failed: {err.message}",
                {
                    "reason": err.reason,
                    "status": err.status,
                    "retryable": err.retryable,
                    "partialText": self.partial_text(),
                },
            )
        raise ToolLoopFailed(
            "the model repeated the same line over and over; generation stopped",
            {"reason": "repeated_line_loop", "partialText": self.partial_text()},
        )

    def _say(self, text: str) -> None:
        """Store and show the final message a call ended the turn with (not the
        model's words: no model call, no usage); the user answers it with their next
        prompt, which the model then reads after it."""
        msg = blocks.message(
            "assistant",
            self.turn_id,
            [{"type": "text", "text": text}],
            model=self.config.model,
            stop_reason="end_turn",
        )
        self.host.commit((AssistantMessage(msg),))
        self.host.announce(events.MessageChunk(msg["messageId"], self.turn_id, text))
        self.last_message_id = msg["messageId"]

    def _store(self, answer: Answer, *, truncated: bool) -> None:
        content = answer.content(
            with_calls=not truncated,
            exit_names=self.host.tools.exit_names,
            describe=self.tools.describe,
        )
        usage = answer.usage.wire() if answer.usage else None
        mutation: Mutation
        if truncated:
            error = answer.error.message if answer.error else None
            msg = blocks.failed_answer(
                answer.message_id,
                self.turn_id,
                content,
                model=self.config.model,
                usage=usage,
                error=error,
            )
            mutation = AssistantTruncated(msg)
        else:
            msg = blocks.message(
                "assistant",
                self.turn_id,
                content,
                message_id=answer.message_id,
                model=self.config.model,
                usage=usage,
                stop_reason=stop_reason(answer.finish),
            )
            mutation = AssistantMessage(msg)
        self.host.commit((mutation,), end_stream=True)
        self._shown_calls = [b for b in content if b.get("type") in ("tool_use", "exit_signal")]
        self.answer = None
        self.last_message_id = answer.message_id

    # -- what is left when it stops -------------------------------------------------------

    def _partial(self, answer: Answer) -> PartialAnswer:
        content = answer.content(with_calls=False)
        return PartialAnswer(answer.message_id, self.turn_id, content, self.config.model)

    def _left(self, why: Why, *, copy: bool) -> list[Mutation]:
        answer = None if self.answer is None else self._partial(self.answer)
        return unfinished(self.host.transcript, why, answer=answer, turn_id=self.turn_id, copy=copy)

    def streaming(self) -> events.MessageChunk | None:
        answer = self.answer
        text = "" if answer is None else answer.shown_text()
        if answer is None or not text:
            return None
        return events.MessageChunk(answer.message_id, self.turn_id, text)

    def snapshot(self) -> list[Mutation]:
        """What this turn would leave if interrupted now, for a fork to record. New
        message ids: the parent may still finish these messages under their own."""
        return self._left(FORKED, copy=True)

    def _abort(self, reason: str) -> None:
        """Record what an interrupt or failure left behind. Synchronous: it must run
        even while the task is being cancelled."""
        host = self.host
        streaming = self.answer
        mutations = self._left(stopped(reason), copy=False)
        if streaming is not None:
            self.answer = None
            self.last_message_id = streaming.message_id
        if mutations:
            try:
                host.commit(mutations, end_stream=True)
            except StoreError as exc:
                # The journal still holds what was shown; the next turn stores it.
                log.warning("could not record the aborted turn of %s yet: %s", host.id, exc)
            except Exception:
                log.exception("could not record the aborted turn of %s", host.id)
        elif streaming is not None:
            host.journal.clear()
        for m in mutations:
            if isinstance(m, ToolCancelled):
                host.announce(events.ToolFinished(m.message["content"][0]))
