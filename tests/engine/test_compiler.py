"""The compiler's request for a small transcript, message by message."""

from __future__ import annotations

from typing import Any

from threadline.engine.compiler import (
    DEFAULT_SYSTEM_PROMPT,
    compile_request,
    result_chars,
)
from threadline.engine.mutations import Msg
from threadline.providers.anthropic_provider import to_anthropic_messages
from threadline.providers.base import ChatMessage, ToolCallFinal, ToolSpec
from threadline.providers.openai_messages import to_openai_messages


def msg(mid: str, role: str, *content: dict[str, Any]) -> Msg:
    return {
        "messageId": mid,
        "turnId": "u1" if role == "user" else "a1",
        "role": role,
        "content": list(content),
        "createdAt": "2026-11-24T00:00:00.000Z",
    }


def result(call_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "toolUseId": call_id,
        "toolName": "read_file",
        "content": [{"type": "text", "text": text}],
        **extra,
    }


TRANSCRIPT: list[Msg] = [
    msg(
        "m1",
        "user",
        {"type": "text", "text": "Explain main.py"},
        {"type": "resource", "resource": {"uri": "file:///main.py", "text": "print(1)"}},
        {"type": "image", "mimeType": "image/png", "data": "AAAA"},
    ),
    msg(
        "m2",
        "assistant",
        {"type": "thought", "text": "Read it first.", "signature": "sig"},
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "main.py"}},
        {"type": "tool_use", "id": "c2", "name": "orphan", "input": {}},
        {"type": "exit_signal", "id": "x1", "name": "done", "arguments": {}},
    ),
    msg("m3", "tool", result("c1", "line\n" * 4000, isError=False)),
    msg("m4", "assistant", {"type": "text", "text": "It prints 1."}),
]


def test_a_small_transcript_compiles_to_these_messages() -> None:
    spec = ToolSpec("read_file", "Read a file", {"type": "object"})
    request = compile_request(
        system_prompt=None,
        experiences={"exp_1": "The user prefers short answers."},
        working=TRANSCRIPT,
        tools=[spec],
        bios="Tools: two calls left.",
        ephemeral=[ChatMessage("user", "Answer now.")],
        max_tokens=256,
        temperature=0.2,
        context_window=1000,
    )
    limit = result_chars(1000)
    assert limit == 1000  # the floor, for a tiny window
    system, user, answer, tool, final, section, nudge = request.messages
    assert system == ChatMessage(
        "system",
        DEFAULT_SYSTEM_PROMPT
        + "\n\nThings to remember (durable notes):\n- [exp_1] The user prefers short answers.",
    )
    # The tool section changes per call: it comes after the history, not in the first
    # message, so the history stays a prefix the next call reuses.
    assert section == ChatMessage("system", "Tools: two calls left.")
    assert user == ChatMessage(
        "user",
        "Explain main.py\n\n[resource file:///main.py]\nprint(1)\n\n"
        "[image: PNG — not sent to the model]",
    )
    # Only the answered call goes back; the orphan and the exit signal never do.
    assert answer.role == "assistant"
    assert answer.content == "Reading."
    assert answer.tool_calls == [
        ToolCallFinal("c1", "read_file", {"path": "main.py"}, '{"path": "main.py"}')
    ]
    assert answer.thoughts == [{"text": "Read it first.", "signature": "sig"}]
    # The result is cut to what fits, with a note the model can act on.
    assert tool.role == "tool"
    assert (tool.tool_call_id, tool.tool_name, tool.is_error) == ("c1", "read_file", False)
    assert tool.content.startswith("line\n" * 200)
    assert tool.content[limit:].startswith(
        "\n[cut: this result has 20000 characters; only the first 1000"
    )
    assert final == ChatMessage("assistant", "It prints 1.")
    assert nudge.role == "user" and nudge.content == "Answer now." and nudge.ephemeral
    assert request.tools == [spec]
    assert (request.tool_choice, request.max_tokens, request.temperature) == ("auto", 256, 0.2)


def test_a_summary_is_sent_as_a_user_message_and_no_tools_means_no_choice() -> None:
    summary = msg(
        "s1", "assistant", {"type": "summary", "text": "Goal: explain.", "compactionId": "c"}
    )
    request = compile_request(
        system_prompt="Be brief.", experiences={}, working=[summary, TRANSCRIPT[3]]
    )
    system, first, last = request.messages
    assert system.content == "Be brief."
    assert first == ChatMessage(
        "user",
        "Summary of the conversation so far (earlier messages were compacted):\nGoal: explain.",
    )
    assert last.content == "It prints 1."
    assert request.tool_choice == "none" and request.tools == []


def test_apis_that_take_system_text_only_first_get_the_tool_section_there() -> None:
    spec = ToolSpec("read_file", "Read a file", {"type": "object"})
    request = compile_request(
        system_prompt="Be brief.",
        experiences={},
        working=TRANSCRIPT,
        tools=[spec],
        bios="Tools: two calls left.",
    )
    assert request.messages[-1] == ChatMessage("system", "Tools: two calls left.")
    wire = to_openai_messages(request.messages)
    assert wire[0] == {"role": "system", "content": "Be brief.\n\nTools: two calls left."}
    assert [m["role"] for m in wire].count("system") == 1
    system, rest = to_anthropic_messages(request.messages)
    assert system == "Be brief.\n\nTools: two calls left."
    assert all("Tools: two calls left." not in str(m["content"]) for m in rest), "not sent twice"


def test_tool_selection_reads_the_same_request_from_the_tail_alone() -> None:
    """Tools are chosen from the latest user message (or a summary, read as one) and
    the turn's tool results: compiling only the tail from there gives the selector
    the very request the whole history would, however long the history."""
    from threadline.engine.compiler import request_tail, to_chat_messages
    from threadline.tools.selection import FIND_TOOLS, FOUND_PREFIX, request_of

    call = {"type": "tool_use", "id": "f1", "name": FIND_TOOLS, "input": {"query": "lint"}}
    found = {
        **result("f1", f"{FOUND_PREFIX}editor_diagnostics\n- ..."),
        "toolName": FIND_TOOLS,
    }
    older = [
        msg(f"o{i}", "user" if i % 2 == 0 else "assistant", {"type": "text", "text": f"old {i}"})
        for i in range(40)
    ]
    turn = [
        msg("u", "user", {"type": "text", "text": "fix the lint errors"}),
        msg("a", "assistant", call),
        msg("t", "tool", found),
        msg("a2", "assistant", {"type": "tool_use", "id": "r1", "name": "read_file", "input": {}}),
        msg("t2", "tool", result("r1", "def f(): pass")),
    ]
    summary = msg("s", "assistant", {"type": "summary", "text": "we fixed the parser"})
    cases: list[list[Msg]] = [
        [*older, *turn],
        [*older, *turn, summary, *turn[1:3]],
        [msg("x", "assistant", {"type": "text", "text": "no user yet"})],
    ]
    for working in cases:
        tail = request_tail(working)
        assert request_of(to_chat_messages(tail)) == request_of(to_chat_messages(working))
        assert len(tail) <= len(turn)
    whole = request_of(to_chat_messages(cases[0]))
    assert whole.found == {"editor_diagnostics"} and "fix the lint" in whole.text


def test_a_long_request_is_compiled_without_the_collector_running_over_and_over() -> None:
    """Compiling allocates a few containers per message and makes no cycles: with the
    collector running, a 100,000-message request paid for a collection every 700
    of them, now and then over the whole heap. At most one runs (when it is back on)."""
    import gc

    working = [
        msg(f"m{i}", "user" if i % 2 == 0 else "assistant", {"type": "text", "text": f"t{i}"})
        for i in range(20_000)
    ]
    runs: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            runs.append(info["generation"])

    assert gc.isenabled()
    gc.collect()
    gc.callbacks.append(seen)
    try:
        request = compile_request(system_prompt=None, experiences={}, working=working)
    finally:
        gc.callbacks.remove(seen)
    assert gc.isenabled()
    assert len(request.messages) == 1 + len(working)
    assert len(runs) <= 1, runs
