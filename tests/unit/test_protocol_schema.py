"""The checked-in schema matches the protocol models (the update builders are checked
against it by the golden fixtures, ``tests/unit/test_golden.py``)."""

from __future__ import annotations

from threadline_protocol.messages import Message
from threadline_protocol.schema import SCHEMA_PATH, render


def test_checked_in_schema_is_current() -> None:
    assert SCHEMA_PATH.read_text() == render(), (
        "protocol/schema.json is stale: run python -m threadline_protocol.schema"
    )


def test_message_model_accepts_stored_messages() -> None:
    Message.model_validate(
        {
            "messageId": "m",
            "turnId": "a1",
            "role": "assistant",
            "createdAt": "x",
            "content": [
                {"type": "thought", "text": "t", "signature": "sig", "redacted": False},
                {"type": "text", "text": "hello"},
                {"type": "tool_use", "id": "c", "name": "n", "input": {}},
                {"type": "exit_signal", "id": "c2", "name": "done", "arguments": {}},
            ],
            "usage": {"inputTokens": 1, "outputTokens": 2},
            "truncated": True,
        }
    )
