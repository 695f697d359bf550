from __future__ import annotations

import json
from typing import Any

from threadline.engine.mutations import (
    AssistantMessage,
    ContextSummary,
    ExperienceForget,
    ExperienceRemember,
    ToolResult,
    UserMessage,
    from_event,
)
from threadline.engine.transcript import Transcript, cancelled_results


def m(mid: str, role: str, turn: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "messageId": mid,
        "turnId": turn,
        "role": role,
        "content": list(blocks),
        "createdAt": "",
    }


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def test_mutations_round_trip_through_events() -> None:
    mutations = [
        UserMessage(m("u1", "user", "u1", text("hi"))),
        AssistantMessage(m("a1", "assistant", "a1", text("yo"))),
        ExperienceRemember("e1", "likes tea"),
        ExperienceForget("e1"),
        ContextSummary(m("s1", "assistant", "a1", {"type": "summary", "text": "S"}), "a1", ("u1",)),
    ]
    for mut in mutations:
        ev = mut.to_event()
        assert from_event(ev.kind, ev.payload) == mut


def test_open_calls_and_cancelled_results() -> None:
    t = Transcript()
    t.apply(UserMessage(m("u1", "user", "u1", text("go"))))
    t.apply(
        AssistantMessage(
            m("a1", "assistant", "a1", {"type": "tool_use", "id": "c1", "name": "x", "input": {}})
        )
    )
    assert list(t.open_calls) == ["c1"]
    [res] = cancelled_results(t, "stopped")
    t.apply(res)
    assert t.open_calls == {}
    assert t.messages[-1]["content"][0]["status"] == "cancelled"
    assert t.turn_number == 1


def _three_turns_compacted() -> Transcript:
    """Three turns, then a compaction up to the second that keeps the first question."""
    t = Transcript()
    for i in range(1, 4):
        t.apply(UserMessage(m(f"u{i}", "user", f"u{i}", text(f"q{i}"))))
        t.apply(AssistantMessage(m(f"a{i}", "assistant", f"a{i}", text(f"r{i}"))))
    t.apply(
        ContextSummary(
            m("s", "assistant", "a3", {"type": "summary", "text": "S"}), "a2", ("u1",), ("fact",)
        )
    )
    return t


def test_summary_checkpoint_shapes_history_and_working_set() -> None:
    t = _three_turns_compacted()
    hist = t.history()
    assert [x["messageId"] for x in hist if x.get("compacted")] == ["a1", "u2", "a2"]
    assert [x["messageId"] for x in t.working()] == ["u1", "s", "u3", "a3"]
    assert list(t.experiences.values()) == ["fact"]
    t.apply(ExperienceRemember("e", "x"))
    t.apply(ExperienceForget("e"))
    assert "e" not in t.experiences


def test_the_working_set_after_two_compactions_keeps_message_order() -> None:
    """Kept messages come in transcript order whatever order the summary lists them
    in, and neither summary but the latest is in the prompt."""
    t = Transcript()

    def turn(i: int) -> None:
        t.apply(UserMessage(m(f"u{i}", "user", f"u{i}", text(f"q{i}"))))
        t.apply(AssistantMessage(m(f"a{i}", "assistant", f"a{i}", text(f"r{i}"))))

    def summary(sid: str, up_to: str, keep: tuple[str, ...]) -> None:
        block = {"type": "summary", "text": sid}
        t.apply(ContextSummary(m(sid, "assistant", "a9", block), up_to, keep))

    for i in range(1, 4):
        turn(i)
    summary("s1", "a2", ("u1",))
    for i in range(4, 7):
        turn(i)
    summary("s2", "a5", ("u5", "u1", "u4"))
    turn(7)
    assert [x["messageId"] for x in t.working()] == [
        *("u1", "u4", "u5", "s2", "u6", "a6", "u7", "a7")
    ]
    marked = [x["messageId"] for x in t.history() if x.get("compacted")]
    assert marked == ["a1", "u2", "a2", "u3", "a3", "s1", "a4", "a5"]


def test_tool_results_close_calls() -> None:
    t = Transcript()
    t.apply(
        AssistantMessage(
            m("a1", "assistant", "a1", {"type": "tool_use", "id": "c1", "name": "x", "input": {}})
        )
    )
    t.apply(
        ToolResult(m("t1", "tool", "a1", {"type": "tool_result", "toolUseId": "c1", "content": []}))
    )
    assert t.open_calls == {}


def _spliced(t: Transcript) -> list[dict[str, Any]]:
    import orjson

    from threadline.engine.rawjson import RawJSON
    from threadline.rpc.outbox import (
        _splice,  # pyright: ignore[reportPrivateUsage]
        dumps,
    )

    body = t.history_json()
    assert isinstance(body, RawJSON)
    fast = orjson.dumps({"messages": body}, default=_splice)  # no stdlib fallback
    assert fast == dumps({"messages": body})
    return json.loads(fast)["messages"]


def test_spliced_history_is_the_history_through_appends_and_compactions() -> None:
    """``session/history`` splices each message's JSON, made once; what it sends must
    stay the plain history as messages arrive and compactions mark older ones."""
    t = Transcript()
    for i in range(1, 4):
        t.apply(UserMessage(m(f"u{i}", "user", f"u{i}", text(f"q{i} \u00e9 \U0001f600"))))
        assert _spliced(t) == t.history()
        t.apply(AssistantMessage(m(f"a{i}", "assistant", f"a{i}", text(f"r{i}"))))
    first = t.history_json()
    assert t.history_json() is first, "kept while nothing changes"
    t.apply(
        ContextSummary(
            m("s", "assistant", "a3", {"type": "summary", "text": "S"}), "a2", ("u1",), ("fact",)
        )
    )
    assert _spliced(t) == t.history()
    assert [x["messageId"] for x in _spliced(t) if x.get("compacted")] == ["a1", "u2", "a2"]
    t.apply(UserMessage(m("u4", "user", "u4", text("after"))))
    assert _spliced(t) == t.history()


def test_history_with_a_huge_integer_is_sent_whole() -> None:
    """orjson refuses integers beyond 64 bits; such a history goes the stdlib way."""
    from threadline.rpc.outbox import dumps

    t = Transcript()
    big = {"type": "tool_use", "id": "c1", "name": "x", "input": {"n": 1 << 70}}
    t.apply(AssistantMessage(m("a1", "assistant", "a1", big)))
    assert json.loads(dumps({"messages": t.history_json()}))["messages"] == t.history()


def test_kept_replay_json_follows_appends_and_compaction_marks() -> None:
    import orjson

    from threadline.rpc.projection import Projection

    project = Projection(shows_compaction=True).replay

    def plain(t: Transcript) -> list[bytes]:
        return [orjson.dumps(u) for msg in t.history() for u in project(msg)]

    t = Transcript()
    for i in range(1, 4):
        t.apply(UserMessage(m(f"u{i}", "user", f"u{i}", text(f"q{i}"))))
        t.apply(AssistantMessage(m(f"a{i}", "assistant", f"a{i}", text(f"r{i}"))))
        assert t.replay_json(project, variant=True) == plain(t)
    t.apply(
        ContextSummary(
            m("s", "assistant", "a3", {"type": "summary", "text": "S"}), "a2", ("u1",), ("fact",)
        )
    )
    assert t.replay_json(project, variant=True) == plain(t)
    assert any(b'"compacted":true' in u for u in plain(t))


def _state(t: Transcript) -> tuple[Any, ...]:
    return (
        t.messages,
        t.index,
        t.experiences,
        t.checkpoint,
        t.working_start,
        t.turn_number,
        t.open_calls,
        t.call_ids,
        t.history(),
        t.working(),
    )


def test_a_snapshot_restores_the_same_fold_and_its_spliced_history() -> None:
    """A fold kept in the store (``engine/folds.py``) must be the fold of the log:
    history, working transcript, open calls, turn numbers, experiences, checkpoint."""
    from threadline.engine.mutations import ContextReplace

    t = Transcript()
    assert _state(Transcript.restore(t.snapshot() or b"") or Transcript()) == _state(t)
    for i in range(1, 4):
        t.apply(UserMessage(m(f"u{i}", "user", f"u{i}", text(f"q{i} \u00e9 \U0001f600"))))
        t.apply(AssistantMessage(m(f"a{i}", "assistant", f"a{i}", text(f"r{i}"))))
    t.apply(ExperienceRemember("e1", "likes tea"))
    t.apply(
        ContextSummary(
            m("s", "assistant", "a3", {"type": "summary", "text": "S"}), "a2", ("u1",), ("fact",)
        )
    )
    call = {"type": "tool_use", "id": "c9", "name": "x", "input": {"f": 1.5}}
    t.apply(UserMessage(m("u4", "user", "u4", text("go"))))
    t.apply(AssistantMessage(m("a4", "assistant", "a4", call)))
    from threadline.rpc.projection import replay as replayed

    def project(msg: dict[str, Any]) -> list[dict[str, Any]]:
        return replayed(msg, compaction=True)

    replay = t.replay_json(project, variant=True)
    data = t.snapshot()
    assert data is not None
    back = Transcript.restore(data)
    assert back is not None
    # answered from the kept JSON first (messages not parsed yet), then compared whole
    assert back.replayed == len(back) == len(t)
    assert back.replay_json(project, variant=True) == replay
    assert _spliced(back) == t.history()
    assert back.snapshot() == data
    assert _state(back) == _state(t)
    assert back.replay_json(project, variant=False) == t.replay_json(project, variant=False)
    # it goes on folding like the original
    [res] = cancelled_results(back, "stopped", "a4")
    for x in (t, back):
        x.apply(ToolResult(res.message))
        x.apply(ContextReplace((m("r1", "user", "u5", text("fresh")),)))
    assert _state(back) == _state(t) and not back.open_calls


def test_a_snapshot_of_another_format_or_damaged_is_not_restored() -> None:
    t = Transcript()
    t.apply(UserMessage(m("u1", "user", "u1", text("hi"))))
    data = t.snapshot()
    assert data is not None
    from threadline.engine.transcript import SNAPSHOT_FORMAT

    now = b'"format":%d' % SNAPSHOT_FORMAT
    assert Transcript.restore(data.replace(now, b'"format":4', 1)) is None
    assert Transcript.restore(data[:-5]) is None
    assert Transcript.restore(b"not a snapshot") is None
    big = Transcript()
    big.apply(UserMessage(m("u1", "user", "u1", {"type": "x", "n": 1 << 70})))
    assert big.snapshot() is None, "not orjson's to write: the log is folded instead"


def test_a_copy_is_the_same_fold_and_goes_on_apart_from_its_original() -> None:
    """A ``delegate`` child's transcript is its parent's copied in memory: the same
    fold (history, working set, calls, checkpoint, spliced JSON, replay), and what is
    applied to one afterwards never shows in the other, for a fold built here and for
    one restored from a snapshot (its messages still JSON)."""
    from threadline.rpc.projection import replay as replayed

    def project(msg: dict[str, Any]) -> list[dict[str, Any]]:
        return replayed(msg, compaction=True)

    t = _three_turns_compacted()
    call = {"type": "tool_use", "id": "c9", "name": "x", "input": {}}
    t.apply(AssistantMessage(m("a4", "assistant", "a4", call)))
    replay = t.replay_json(project, variant=True)
    restored = Transcript.restore(t.snapshot() or b"")
    assert restored is not None
    for original in (t, restored):
        before = _state(original)
        history = _spliced(original)
        copy = original.copy()
        assert _spliced(copy) == history and copy.replay_json(project, variant=True) == replay
        assert _state(copy) == before
        [res] = cancelled_results(copy, "stopped", "a4")
        copy.apply(res)
        copy.apply(UserMessage(m("u9", "user", "u9", text("child"))))
        copy.apply(ExperienceRemember("e2", "only the copy"))
        assert _state(original) == before and _spliced(original) == history
        assert original.replay_json(project, variant=True) == replay
        assert copy.open_calls == {} and "c9" in original.open_calls
        assert [x["messageId"] for x in _spliced(copy)][-2:] == [res.message["messageId"], "u9"]
        assert copy.experiences == {**original.experiences, "e2": "only the copy"}


def test_a_kept_folds_replay_is_read_only_when_a_replay_needs_it() -> None:
    """The store keeps the replay apart (``folds.replay``): a restored fold answers
    history, its length and its last message without reading it or parsing a message;
    the first replay reads it once and splices it as kept."""
    from threadline.engine.transcript import Folded
    from threadline.rpc.projection import replay as replayed

    def project(msg: dict[str, Any]) -> list[dict[str, Any]]:
        return replayed(msg, compaction=False)

    t = Transcript()
    for i in range(1, 30):
        t.apply(UserMessage(m(f"u{i}", "user", f"u{i}", text(f"q{i} \u00e9"))))
        t.apply(AssistantMessage(m(f"a{i}", "assistant", f"a{i}", text(f"r{i}"))))
    t.apply(
        ContextSummary(m("s", "assistant", "a29", {"type": "summary", "text": "S"}), "a20", (), ())
    )
    replay = t.replay_json(project, variant=("acp", 2))  # a tuple: kept as a JSON array
    capture = t.capture()
    assert capture is not None
    folded = capture.assemble()
    assert isinstance(folded, Folded) and folded.replay is not None
    reads: list[int] = []

    def read() -> bytes | None:
        reads.append(1)
        return folded.replay

    back = Transcript.restore(folded.messages, read)
    assert back is not None
    assert _spliced(back) == t.history() and len(back) == len(t) and back.replayed == len(t)
    assert back.last_message_id == "s"
    assert not reads, "history needs no replay"
    assert back.index == t.index and back.working() == t.working()

    def projected(msg: dict[str, Any]) -> list[dict[str, Any]]:
        raise AssertionError("the kept replay is spliced, not made again")

    assert back.replay_json(projected, variant=("acp", 2)) == replay
    assert back.replay_json(projected, variant=("acp", 2)) == replay
    assert reads == [1]
    # a replay that is not the one the messages were kept with is made again
    for bad in (None, folded.replay[:-1], folded.replay.replace(b'"format":5', b'"format":4')):
        again = Transcript.restore(folded.messages, lambda bad=bad: bad)
        assert again is not None and again.replay_json(project, variant=("acp", 2)) == replay


def test_a_restored_folds_last_message_is_known_without_parsing_its_messages(
    monkeypatch: Any,
) -> None:
    t = Transcript()
    t.apply(UserMessage(m("u1", "user", "u1", text("hi"))))
    t.apply(AssistantMessage(m("a1", "assistant", "a1", text("yo"))))
    back = Transcript.restore(t.snapshot() or b"")
    assert back is not None

    def parsed(self: Transcript) -> None:
        raise AssertionError("the messages were parsed")

    monkeypatch.setattr(Transcript, "messages", property(parsed))
    assert back.last_message_id == "a1" and len(back) == 2


def test_a_restored_folds_compaction_marks_are_found_without_making_its_index(
    monkeypatch: Any,
) -> None:
    """``session/load`` of a compacted fold needs which messages are compacted: the
    ids a checkpoint keeps are found in the kept ids, not through an index of every
    message (made on first need, as `index` still is when something asks for it)."""
    t = Transcript()
    for i in range(1, 7):
        t.apply(UserMessage(m(f"u{i}", "user", f"u{i}", text(f"q{i}"))))
        t.apply(AssistantMessage(m(f"a{i}", "assistant", f"a{i}", text(f"r{i}"))))
        if i == 3:
            block = {"type": "summary", "text": "S1"}
            t.apply(ContextSummary(m("s1", "assistant", "a3", block), "a2", ("u1", "a2")))
    block = {"type": "summary", "text": "S2"}
    t.apply(ContextSummary(m("s2", "assistant", "a6", block), "a5", ("u1", "u4", "gone")))
    back = Transcript.restore(t.snapshot() or b"")
    assert back is not None

    def indexed(self: Transcript) -> dict[str, int]:
        raise AssertionError("every message's id was indexed")

    with monkeypatch.context() as patched:
        patched.setattr(Transcript, "index", property(indexed))
        assert back.compacted_indexes() == t.compacted_indexes()
        assert [back.position(x) for x in ("u1", "a2", "u4", "s2", "gone")] == [0, 3, 7, 13, -1]
    assert back.index == t.index
    assert [back.position(x) for x in ("u1", "s2", "gone")] == [0, 13, -1]
    assert [x["messageId"] for x in back.working()] == [x["messageId"] for x in t.working()]
