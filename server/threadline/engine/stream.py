"""One model call's answer as it streams: its events read in bursts and assembled.

Deltas reach the client in *bursts*: the turn drains every provider event that is
ready (`read_bursts`), journals the burst in one commit, then announces it as one
coalesced chunk per block (`Answer.runs`). That is what keeps per-token cost low and
what a crash can recover. `Answer` is the message being streamed, not yet a
mutation: its text, thoughts and calls, its usage and how it finished.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field, replace

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ..providers.base import (
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
from . import blocks
from .blocks import Block
from .ids import new_id
from .loopguard import RepeatedLineDetector
from .toolcalls import parse_fallback_call

log = logging.getLogger(__name__)

BURST_MAX = 512
"""Most provider events handled before a burst is committed and announced."""

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "refusal": "refusal"}


def stop_reason(finish: str) -> str:
    """The turn's stop reason for a provider's finish reason."""
    return STOP_REASONS.get(finish, "end_turn")


@dataclass(slots=True)
class Answer:
    """The assistant message being streamed."""

    message_id: str = field(default_factory=lambda: new_id("msg"))
    text: list[str] = field(default_factory=list[str])
    thoughts: list[Block] = field(default_factory=list[Block])
    calls: list[ToolCallFinal] = field(default_factory=list[ToolCallFinal])
    usage: Usage | None = None
    finish: str = "stop"
    error: ProviderError | None = None
    pending: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    deltas: list[str] = field(default_factory=list[str])
    """Every text delta as it came, whatever is taken out of the text afterwards."""
    loop_detected: bool = False
    streamed: str | None = None
    """The text as it streamed, when a call written in it was taken out afterwards."""
    guard: RepeatedLineDetector = field(default_factory=RepeatedLineDetector)

    def full_text(self) -> str:
        return "".join(self.text)

    def shown_text(self) -> str:
        """The text its client has been sent so far (what is pending goes out with the
        next burst): what a client that starts watching now needs to catch up."""
        waiting = sum(1 for kind, _ in self.pending if kind == "text")
        return "".join(self.deltas[: len(self.deltas) - waiting])

    @property
    def stopped(self) -> bool:
        """The provider failed or the model looped: nothing more is read."""
        return self.loop_detected or self.error is not None

    def take(self, event: ProviderEvent) -> None:
        """Fold one provider event in (a status notice is the turn's to announce)."""
        if isinstance(event, TextDelta):
            if not event.text:
                return
            self.text.append(event.text)
            self.deltas.append(event.text)
            self.pending.append(("text", event.text))
            if self.guard.feed(event.text):
                self.loop_detected = True
        elif isinstance(event, ThoughtDelta):
            last = self.thoughts[-1] if self.thoughts else None
            if last is not None and last.get("signature") is None and not event.extra:
                last["text"] += event.text
                if event.signature is not None:
                    last["signature"] = event.signature
            else:
                self.thoughts.append(blocks.thought(event.text, event.signature, event.extra))
            if event.text:
                self.pending.append(("thought", event.text))
        elif isinstance(event, ToolCallFinal):
            # The wire promises tool call ids unique for ever; providers reuse theirs
            # (across sessions, restarts, even within one answer), so the engine mints
            # its own and sends those back to the provider in the continuation.
            self.calls.append(replace(event, id=new_id("call")))
        elif isinstance(event, Usage):
            self.usage = event
        elif isinstance(event, Done):
            self.finish = event.finish_reason
        elif isinstance(event, ProviderError):
            self.error = event
        elif isinstance(event, (StatusNotice, ToolCallDelta)):  # pyright: ignore[reportUnnecessaryIsInstance]
            pass

    def runs(self) -> list[tuple[str, str]]:
        """The burst's pending deltas as ``(kind, text)`` runs, one per block kind in a
        row: exactly what is journaled and announced."""
        if not self.pending:
            return []
        runs: list[tuple[str, str]] = []
        kind, buf = self.pending[0][0], [self.pending[0][1]]
        for k, text in self.pending[1:]:
            if k == kind:
                buf.append(text)
                continue
            runs.append((kind, "".join(buf)))
            kind, buf = k, [text]
        runs.append((kind, "".join(buf)))
        self.pending.clear()
        return runs

    def take_written_call(self) -> None:
        """A text-only model may write a call as JSON; take it and strip it from the answer."""
        text = self.full_text()
        parsed = parse_fallback_call(text)
        if parsed is None:
            return
        call, remaining = parsed
        self.calls.append(call)
        self.streamed = text
        self.text = [remaining] if remaining else []

    def content(
        self,
        *,
        with_calls: bool = True,
        exit_names: frozenset[str] = frozenset(),
        describe: Callable[[ToolCallFinal], Block] | None = None,
    ) -> list[Block]:
        """Thoughts, text, then calls; exit calls become ``exit_signal`` blocks, which
        are never sent back to the model as calls and need no result. ``describe``
        gives the ``tool_use`` block of a call, with what the client is shown of it."""
        out: list[Block] = list(self.thoughts)
        text = self.full_text()
        if self.streamed is not None:
            out.append(blocks.text_block(text, streamed=self.streamed))
        elif text:
            out.append(blocks.text(text))
        if with_calls:
            for c in self.calls:
                if c.name in exit_names:
                    out.append(blocks.exit_block(c.id, c.name, c.arguments))
                elif describe is not None:
                    out.append(describe(c))
                else:
                    out.append(blocks.bare_call_block(c.id, c.name, c.arguments))
        return out


async def read_bursts(
    provider: Provider,
    request: ChatRequest,
    on_burst: Callable[[list[ProviderEvent]], Awaitable[bool]],
) -> None:
    """Stream ``request``, handing ``on_burst`` every event that is ready at once (at
    most ``BURST_MAX`` more after the first); it returns True to stop reading."""
    send, recv = anyio.create_memory_object_stream[ProviderEvent](max_buffer_size=BURST_MAX)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_produce, provider, request, send)
        async with recv:
            ended = False
            while not ended:
                try:
                    burst = [await recv.receive()]
                except anyio.EndOfStream:
                    break
                for _ in range(BURST_MAX):
                    try:
                        burst.append(recv.receive_nowait())
                    except anyio.WouldBlock:
                        break
                    except anyio.EndOfStream:
                        ended = True
                        break
                if await on_burst(burst):
                    tg.cancel_scope.cancel()
                    break


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
