"""remember/forget against the session's memory: ids round-trip, refusals store nothing."""

from __future__ import annotations

from pathlib import Path

from threadline.engine.memory import SessionMemory
from threadline.engine.mutations import ExperienceForget, ExperienceRemember, Mutation
from threadline.tools.base import ToolContext
from threadline.tools.memory import MAX_FACT, ForgetTool, RememberTool


class Facts:
    def __init__(self) -> None:
        self.committed: list[Mutation] = []
        self.facts: dict[str, str] = {}

    def commit(self, mutations: list[Mutation]) -> None:
        self.committed.extend(mutations)
        for m in mutations:
            if isinstance(m, ExperienceRemember):
                self.facts[m.experience_id] = m.text
            elif isinstance(m, ExperienceForget):
                self.facts.pop(m.experience_id, None)


def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext("s", "c", str(tmp_path), (str(tmp_path),), None)  # type: ignore[arg-type]


async def test_remember_then_forget_by_the_returned_id(tmp_path: Path) -> None:
    facts = Facts()
    memory = SessionMemory(facts.commit, lambda: facts.facts)
    said = await RememberTool(memory).run({"text": "  tabs,\n not spaces "}, ctx(tmp_path))
    assert not said.is_error
    (experience_id, text), *_ = facts.facts.items()
    assert text == "tabs, not spaces"
    assert said.content[0]["text"] == f"remembered as {experience_id}"
    gone = await ForgetTool(memory).run({"id": experience_id}, ctx(tmp_path))
    assert not gone.is_error and facts.facts == {}
    assert [type(m) for m in facts.committed] == [ExperienceRemember, ExperienceForget]


async def test_refusals_commit_nothing(tmp_path: Path) -> None:
    facts = Facts()
    memory = SessionMemory(facts.commit, lambda: facts.facts)
    empty = await RememberTool(memory).run({"text": "  "}, ctx(tmp_path))
    long = await RememberTool(memory).run({"text": "x" * (MAX_FACT + 1)}, ctx(tmp_path))
    unknown = await ForgetTool(memory).run({"id": "exp_nope"}, ctx(tmp_path))
    assert empty.is_error and long.is_error and unknown.is_error
    assert facts.committed == []
