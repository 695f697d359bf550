"""How the transcript folds checkpoint marks and resets (rewind, unrewind), and carries
them in a kept fold."""

from __future__ import annotations

from typing import Any

import orjson

from threadline.engine.mutations import (
    AssistantMessage,
    ExperienceRemember,
    Mark,
    TranscriptReset,
    UserMessage,
    WorkspaceCheckpoint,
    from_event,
)
from threadline.engine.rawjson import RawJSON
from threadline.engine.transcript import Transcript


def msg(mid: str, role: str) -> dict[str, Any]:
    return {
        "messageId": mid,
        "role": role,
        "turnId": "u1",
        "content": [{"type": "text", "text": mid}],
    }


def _json(t: Transcript) -> list[Any]:
    made = t.history_json()
    assert isinstance(made, RawJSON)
    return orjson.loads(made.data)


def two_turns() -> Transcript:
    t = Transcript()
    t.apply(UserMessage(msg("u1", "user")))
    t.apply(WorkspaceCheckpoint((("/w", "tree0"),), "h", "before"))
    t.apply(AssistantMessage(msg("a1", "assistant")))
    t.apply(WorkspaceCheckpoint((("/w", "tree1"),), "h", "after"))
    t.apply(ExperienceRemember("x1", "a fact"))
    t.apply(UserMessage(msg("u2", "user")))
    t.apply(AssistantMessage(msg("a2", "assistant")))
    return t


def test_a_mark_is_placed_at_the_transcript_length_and_creates_no_message() -> None:
    t = two_turns()
    assert [(k.position, k.trees, k.moment) for k in t.marks] == [
        (1, (("/w", "tree0"),), "before"),
        (2, (("/w", "tree1"),), "after"),
    ]
    assert len(t) == 4


def test_a_reset_keeps_a_prefix_and_takes_its_state_and_an_unrewind_brings_back() -> None:
    t = two_turns()
    full = _json(t)
    reset = TranscriptReset(2, (), {}, 0, None, (t.marks[0],), "sess_cut")
    t.apply(from_event(reset.kind, orjson.loads(orjson.dumps(reset.to_event().payload))))
    assert [m["messageId"] for m in t.messages] == ["u1", "a1"]
    assert t.experiences == {} and t.marks == [Mark(1, (("/w", "tree0"),), "h", "before")]
    assert t.rewound == "sess_cut"
    assert "u2" not in t.index
    assert _json(t) == full[:2]  # the history's cache is not stale

    kept = Transcript.restore(t.snapshot() or b"")
    assert kept is not None and kept.rewound == "sess_cut" and kept.marks == t.marks

    back = two_turns()
    t.apply(
        TranscriptReset(
            2, tuple(back.messages[2:]), back.experiences, 0, None, tuple(back.marks), None
        )
    )
    assert t.history() == back.history()
    assert t.experiences == {"x1": "a fact"} and t.rewound is None


def test_the_next_message_ends_what_unrewind_may_undo() -> None:
    t = two_turns()
    t.apply(TranscriptReset(2, (), {}, 0, None, (), "sess_cut"))
    t.apply(WorkspaceCheckpoint((("/w", "tree0"),), "h", "rewind"))
    assert t.rewound == "sess_cut"  # a checkpoint is not a message
    t.apply(UserMessage(msg("u3", "user")))
    assert t.rewound is None
