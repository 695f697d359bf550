"""The checked-in schema and the hot-path update builders match the protocol models."""

from __future__ import annotations

from pydantic import TypeAdapter

from threadline.engine import updates
from threadline_protocol.messages import Message
from threadline_protocol.schema import SCHEMA_PATH, render
from threadline_protocol.updates import SessionUpdate


def test_checked_in_schema_is_current() -> None:
    assert SCHEMA_PATH.read_text() == render(), (
        "protocol/schema.json is stale: run python -m threadline_protocol.schema"
    )


def test_update_builders_match_the_models() -> None:
    adapter: TypeAdapter[object] = TypeAdapter(SessionUpdate)
    samples = [
        updates.message_chunk("agent_message_chunk", "m1", "a1", "hi"),
        updates.message_chunk("agent_thought_chunk", "m1", "a1", "hmm"),
        updates.content_chunk("user_message_chunk", "m0", "u1", {"type": "text", "text": "q"}),
        updates.tool_call(
            updates.call_block(
                "c1", "read_file", {"path": "x"}, title="Read x", kind="read", locations=[]
            ),
            "a1",
        ),
        updates.tool_call(
            {"type": "exit_signal", "id": "c2", "name": "sig", "arguments": {}}, "a1"
        ),
        updates.tool_progress("c1", "in_progress"),
        updates.tool_result(
            {"type": "tool_result", "toolUseId": "c1", "content": [{"type": "text", "text": "ok"}]}
        ),
        updates.tool_result(
            {"type": "tool_result", "toolUseId": "c1", "content": [], "status": "cancelled"}
        ),
        updates.usage_update(10, 100),
        updates.session_info("t", "2026-01-01T00:00:00.000Z", status="retrying"),
        updates.available_commands([("compact", "c", "hint"), ("fork", "f", None)]),
        updates.compaction("k1", "completed", summary="S"),
        updates.compaction("k1", "failed", error="why"),
    ]
    for sample in samples:
        model = adapter.validate_python(sample)
        dumped = model.model_dump(by_alias=True, exclude_none=True, mode="json")  # type: ignore[attr-defined]
        for key, value in sample.items():
            assert dumped.get(key) == value or key == "content", (key, sample)


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
