"""The requirement table and the suite agree, and the checks themselves catch what they
are for (a check that cannot fail proves nothing)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conformance.requirements import REQUIREMENTS, Tier
from tests.conformance.wire import Checks

HERE = Path(__file__).resolve().parent


def used() -> set[str]:
    ids: set[str] = set()
    for path in HERE.glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "requirement"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                ids.add(str(node.args[0].value))
    return ids


def test_every_requirement_is_checked_and_every_check_is_a_requirement() -> None:
    assert used() - set(REQUIREMENTS) == set(), "markers naming no requirement"
    assert set(REQUIREMENTS) - used() == set(), "requirements no test checks"


def test_every_capability_requirement_names_its_capability() -> None:
    for r in REQUIREMENTS.values():
        assert r.tier != Tier.CAPABILITY or r.capability is not None, r.id


def v2_checks() -> Checks:
    checks = Checks()
    init = {"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}}
    checks.sent({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    return checks


def update(**fields: object) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": fields},
    }


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (
            update(sessionUpdate="state_update", state="idle", stopReason="end_turn", extra=1),
            "extra",
        ),
        (update(sessionUpdate="tool_call", toolCallId="c"), "sessionUpdate"),
        (
            update(sessionUpdate="agent_message_chunk", content={"type": "text", "text": "x"}),
            "messageId",
        ),
        (
            update(
                sessionUpdate="user_message", messageId="m", _meta={"threadline": {"turnId": "u1"}}
            ),
            "_-prefixed",
        ),
        (
            update(
                sessionUpdate="tool_call_update",
                toolCallId="c",
                content=[{"type": "diff", "path": "/a", "oldText": "", "newText": "x"}],
            ),
            "diff",
        ),
    ],
)
def test_the_v2_checks_catch_what_v2_does_not_define(bad: dict[str, object], why: str) -> None:
    checks = v2_checks()
    checks.received(bad)
    assert any(why in p for p in checks.problems), checks.problems


def test_the_v2_checks_pass_a_v2_update() -> None:
    checks = v2_checks()
    checks.received(update(sessionUpdate="state_update", state="idle", stopReason="end_turn"))
    assert checks.problems == []


def test_the_v1_checks_catch_an_unknown_top_level_key() -> None:
    checks = Checks()
    checks.sent(
        {"jsonrpc": "2.0", "id": 1, "method": "session/close", "params": {"sessionId": "s"}}
    )
    checks.received({"jsonrpc": "2.0", "id": 1, "result": {"surprise": True}})
    assert any("surprise" in p for p in checks.problems), checks.problems
