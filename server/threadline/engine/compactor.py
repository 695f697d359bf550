"""Running a compaction: the model writes the summary, the host commits it.

What is summarised and how it is asked for is `compaction.py`'s (pure); this is the
part with effects, done through the narrow `CompactionHost`, so a turn that must
compact first and ``session/compact`` share it. The result is one
``ContextSummary`` mutation, so a compaction that fails (or is stopped) changes
nothing. A `Compaction` is a `tasks.SessionTask`: ``session/compact`` runs it under
its own lease; a turn runs one inside its own.
"""

from __future__ import annotations

from contextlib import aclosing
from typing import Literal

from ..providers.base import ChatRequest, ProviderError, TextDelta
from . import blocks, compaction, events
from .compiler import result_chars, to_chat_messages
from .errors import ProviderFailed
from .host import CompactionHost
from .ids import new_id
from .mutations import ContextSummary, Msg, Mutation
from .outcomes import CompactionOutcome
from .tasks import Work


class CompactionFailed(ProviderFailed):
    """The summary could not be written; the transcript is unchanged."""


class Compaction:
    """Summarise and commit one checkpoint, announcing its progress."""

    work = Work.COMPACT
    lease_turn_id: str | None = None

    def __init__(
        self,
        host: CompactionHost,
        instructions: str | None,
        keep_turns: int,
        *,
        turn_id: str | None = None,
    ) -> None:
        self.host = host
        self.instructions = instructions
        self.keep_turns = keep_turns
        self.turn_id = turn_id
        """The turn the summary is stored in; by default the session's latest."""
        self._before: tuple[int, int] | None = None

    def snapshot(self) -> list[Mutation]:
        return []  # nothing is stored until the summary is whole

    def streaming(self) -> events.MessageChunk | None:
        return None  # a summary is shown as the compaction's progress, not as chunks

    def cancelled(self) -> CompactionOutcome:
        tokens, messages = self._before or (0, len(self.host.transcript.working()))
        return CompactionOutcome.unchanged(tokens, messages, "cancelled")

    async def run(self) -> CompactionOutcome:
        host = self.host
        transcript = host.transcript
        config = host.config
        turn_id = self.turn_id or f"a{transcript.turn_number}"
        provider = await host.provider()
        compaction_id = new_id("cmp")
        window = provider.context_window

        def tokens(working: list[Msg] | None = None) -> int:
            return provider.count_tokens(
                host.compile_request(
                    budget=config.tool_budget, context_window=window, working=working
                )
            )

        tokens_before = tokens()
        messages_before = len(transcript.working())
        self._before = (tokens_before, messages_before)
        task = next((m for m in transcript.messages if m["role"] == "user"), None)
        task_id = None
        if task is not None and provider.count_tokens(ChatRequest(to_chat_messages([task]))) <= int(
            window * compaction.TASK_SHARE
        ):
            task_id = task["messageId"]  # an over-large task is summarised like the rest
        # A session over its limit must come back inside the context, whatever
        # keep_turns asks (verbatim turns and the task message are summarised if need be).
        budget = compaction.summary_budget(config.max_tokens)
        over = tokens_before > (host.compaction_limit(provider) or window)
        cut = compaction.plan(
            transcript.working(),
            self.keep_turns,
            task_id,
            (lambda kept: tokens(kept) + budget <= window) if over else None,
        )
        if cut is None:
            return CompactionOutcome.unchanged(
                tokens_before, messages_before, "nothing old enough to summarise"
            )
        host.announce(events.CompactionProgress(compaction_id, "in_progress"))
        try:
            rendered = compaction.render_for_summary(cut.summarize)
            request = compaction.summary_request(rendered, self.instructions, budget)
            parts: list[str] = []
            async with aclosing(provider.stream(request)) as stream:  # type: ignore[type-var]
                async for event in stream:
                    if isinstance(event, TextDelta):
                        parts.append(event.text)
                    elif isinstance(event, ProviderError):
                        raise CompactionFailed(
                            f"compaction failed: {event.message}",
                            {"reason": event.reason, "retryable": event.retryable},
                        )
            text = "".join(parts).strip()
            if not text:
                raise CompactionFailed("compaction failed: the model wrote an empty summary")
        except BaseException as exc:
            status: Literal["failed", "cancelled"] = (
                "failed" if isinstance(exc, Exception) else "cancelled"
            )
            host.announce(events.CompactionProgress(compaction_id, status, str(exc) or None))
            raise
        message = blocks.summary_message(text, compaction_id, turn_id, config.model)
        replaced = provider.count_tokens(
            ChatRequest(to_chat_messages(cut.summarize, result_limit=result_chars(window)))
        )
        if provider.count_tokens(ChatRequest(to_chat_messages([message]))) >= replaced:
            # A summary longer than what it replaces would only grow the prompt.
            reason = "the summary is not shorter than the history it would replace"
            host.announce(events.CompactionProgress(compaction_id, "failed", reason))
            return CompactionOutcome.unchanged(tokens_before, messages_before, reason)
        host.commit([ContextSummary(message, cut.up_to_message_id, cut.keep_ids)])
        tokens_after = tokens()
        host.announce(events.Compacted(message["messageId"], turn_id, message["content"][0]))
        return CompactionOutcome(
            text,
            tokens_before,
            tokens_after,
            messages_before,
            len(transcript.working()),
            compacted=True,
        )
