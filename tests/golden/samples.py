"""The fixed inputs the golden ``session/update`` fixtures are made from: the same stored
blocks serve the projection's builders (tests/unit/test_golden.py) and the live engine
events (tests/unit/test_projection.py), so both are checked against one fixture."""

from __future__ import annotations

from typing import Any

from threadline.engine.blocks import call_block, summary_block
from threadline.engine.modes import mode_option
from threadline_protocol.sessions import ConfigSelectOption, SessionConfigOption

SID = "sess_01a20b0c5e7f3b2a9c4d1e6f8a0b"
MID = "msg_01a20b0c5e80aa11bb22cc33dd44"
CALL = "call_01a20b0c5e81aa11bb22cc33dd44"
CMP = "cmp_01a20b0c5e84aa11bb22cc33dd44"
NOW = "2026-11-24T00:00:00.000Z"

READ = call_block(
    CALL,
    "read_file",
    {"path": "main.py"},
    title="Read main.py",
    kind="read",
    locations=[{"path": "/home/ada/project/main.py"}],
)
RESULT: dict[str, Any] = {
    "type": "tool_result",
    "toolUseId": CALL,
    "toolName": "read_file",
    "content": [{"type": "text", "text": "print('hi')"}],
    "isError": False,
    "status": "completed",
    "rawOutput": {"source": "disk", "totalLines": 1},
}
SUMMARY = summary_block("Goal: explain main.py.", CMP)

DIFF: dict[str, Any] = {
    "type": "diff",
    "path": "/home/ada/project/main.py",
    "oldText": "print('hi')\n",
    "newText": "print('hello')\n",
}
EDIT = call_block(
    CALL,
    "edit_file",
    {"path": "main.py", "edits": [{"oldText": "'hi'", "newText": "'hello'"}]},
    title="Edit main.py",
    kind="edit",
    locations=[{"path": "/home/ada/project/main.py"}],
    content=[DIFF],
)
EDITED: dict[str, Any] = {
    "type": "tool_result",
    "toolUseId": CALL,
    "toolName": "edit_file",
    "content": [{"type": "text", "text": "Edited main.py (-1 +1 lines)"}],
    "isError": False,
    "status": "completed",
    "display": [DIFF],
}
PLAN_ENTRIES: list[dict[str, Any]] = [
    {"content": "Read main.py", "priority": "high", "status": "completed"},
    {"content": "Explain what it does", "priority": "medium", "status": "pending"},
]


def config_options() -> tuple[SessionConfigOption, ...]:
    """A session's options as ``config_option_update`` lists them (model, mode and
    built-in tools)."""
    model = SessionConfigOption(
        id="model",
        name="Model",
        category="model",
        current_value="openai:gpt-4o-mini",
        options=[
            ConfigSelectOption(value="openai:gpt-4o-mini", name="GPT-4o mini"),
            ConfigSelectOption(value="anthropic:claude-sonnet-4", name="Claude Sonnet 4"),
        ],
    )
    tools = SessionConfigOption(
        id="builtinTools",
        name="Built-in tools",
        current_value="off",
        options=[
            ConfigSelectOption(value="on", name="On"),
            ConfigSelectOption(value="off", name="Off"),
        ],
    )
    return (model, mode_option("plan"), tools)
