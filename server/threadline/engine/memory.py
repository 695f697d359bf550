"""The session's side of the remember/forget tools (`tools.memory.Memory`).

Facts are mutations like any other transcript change: committed to the store before
they count, folded by the transcript, seen by every sidecar on the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .ids import new_id
from .mutations import ExperienceForget, ExperienceRemember, Mutation


class SessionMemory:
    def __init__(
        self, commit: Callable[[list[Mutation]], None], facts: Callable[[], Mapping[str, str]]
    ) -> None:
        self._commit = commit
        self._facts = facts

    def remember(self, text: str) -> str:
        experience_id = new_id("exp")
        self._commit([ExperienceRemember(experience_id, text)])
        return experience_id

    def forget(self, experience_id: str) -> None:
        self._commit([ExperienceForget(experience_id)])

    def facts(self) -> Mapping[str, str]:
        return self._facts()
