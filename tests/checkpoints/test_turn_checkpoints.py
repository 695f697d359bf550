"""Where a turn checkpoints the workspace: before its first call that may change
files and after each such call; never around calls that only read."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.fakes import EchoTool, FakeHost, scripted, turn
from threadline.tools.base import ToolKind, mutates

pytestmark = pytest.mark.timeout(30)


class Writer(EchoTool):
    kind: ToolKind = "edit"
    parallelizable = False


def call(name: str, text: str) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": {"text": text}}}


async def test_before_the_first_change_and_after_each() -> None:
    provider = scripted(
        [call("echo", "look")],
        [call("write", "one")],
        [call("write", "two"), call("echo", "again")],
        [{"text": "done"}],
    )
    write = Writer()
    write.name = "write"
    host = FakeHost(provider, tools=[EchoTool(), write])
    await turn(host).run()
    assert host.checkpoints == ["before", "after", "after"]


async def test_a_turn_that_only_reads_takes_none() -> None:
    host = FakeHost(scripted([call("echo", "x")], [{"text": "ok"}]), tools=[EchoTool()])
    await turn(host).run()
    assert host.checkpoints == []


def test_what_declares_itself_mutating() -> None:
    class Declared(EchoTool):
        mutating = True

    assert mutates(Writer()) and mutates(Declared()) and not mutates(EchoTool())
