"""Slash commands: a prompt that is just ``/compact`` or ``/fork`` runs as a task of
its own instead of a turn (ACP's slash commands), answered with one message chunk."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import events
from .compactor import Compaction
from .ids import new_id
from .mutations import Mutation
from .outcomes import CommandOutcome, Forked, PromptOutcome
from .session import Session
from .tasks import SessionTask, Work
from .turn import Turn

SLASH_COMMANDS: tuple[tuple[str, str, str | None], ...] = (
    ("compact", "Summarise older history to free context", "optional instructions"),
    ("fork", "Branch this session into a new one", "optional message id"),
)

Fork = Callable[[str, str | None], Forked]
"""Fork a session (by id) at a message, or at its end."""


def slash_command(blocks: list[dict[str, Any]]) -> tuple[str, str] | None:
    """``("compact", "instructions")`` for a prompt that is just a slash command."""
    if len(blocks) != 1 or blocks[0].get("type") != "text":
        return None
    text = str(blocks[0].get("text", "")).strip()
    for name, _, _ in SLASH_COMMANDS:
        if text == f"/{name}" or text.startswith(f"/{name} "):
            return name, text[len(name) + 1 :].strip()
    return None


def prompt_task(
    session: Session,
    blocks: list[dict[str, Any]],
    fork: Fork,
    *,
    message_id: str | None = None,
    show: bool = False,
) -> SessionTask[PromptOutcome]:
    """What a prompt runs: its command, or a turn (its prompt stored under
    ``message_id`` when given: a queued prompt keeps the id it waited under; shown to
    this client when ``show``: see `Turn`)."""
    command = slash_command(blocks)
    if command is None:
        return Turn(session, blocks, message_id=message_id, show=show)
    name, arg = command
    if name == "compact":
        return CompactCommand(session, arg or None)
    return ForkCommand(session, arg or None, fork)


class _Command:
    """A command's answer: one chunk in the session's latest turn."""

    name = ""
    lease_turn_id: str | None = None
    turn_id: str | None = None

    def __init__(self, session: Session) -> None:
        self.session = session

    def _say(self, text: str) -> CommandOutcome:
        turn_id = f"a{self.session.transcript.turn_number}"
        self.session.announce(events.MessageChunk(new_id("msg"), turn_id, text))
        return CommandOutcome(self.name)

    def cancelled(self) -> CommandOutcome:
        return CommandOutcome(self.name)

    def snapshot(self) -> list[Mutation]:
        return []

    def streaming(self) -> events.MessageChunk | None:
        return None


class CompactCommand(_Command):
    """``/compact [instructions]``: a compaction that keeps two turns."""

    name = "compact"
    work: Work | None = Work.COMPACT

    def __init__(self, session: Session, instructions: str | None) -> None:
        super().__init__(session)
        self.compaction = Compaction(session, instructions, 2)

    async def run(self) -> CommandOutcome:
        done = await self.compaction.run()
        return self._say(
            f"Compacted {done.messages_before} messages into {done.messages_after} "
            f"({done.tokens_before} → {done.tokens_after} tokens)."
            if done.summary
            else "Nothing to compact yet."
        )


class ForkCommand(_Command):
    """``/fork [message id]``: a new session; it writes nothing to this one, so it
    holds no lease and runs beside a turn."""

    name = "fork"
    work: Work | None = None

    def __init__(self, session: Session, message_id: str | None, fork: Fork) -> None:
        super().__init__(session)
        self.message_id = message_id
        self.fork = fork

    async def run(self) -> CommandOutcome:
        forked = self.fork(self.session.id, self.message_id)
        return self._say(f"Forked into session {forked.session_id}.")
