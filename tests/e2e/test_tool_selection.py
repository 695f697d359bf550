"""Tool selection with the real embedded model (SmolLM2-135M), as an editor runs it.

The sidecar is initialized the way an editor initializes it (it can read and write
files), so sessions get the default tool set: the built-in workspace tools
(read_file, list_directory, search_text, write_file) and memory tools (remember,
forget). Two suites:

* plain questions: the default tool set must not change how often the model answers
  a question that needs no tool sensibly (each answer is checked for words a
  sensible answer contains), compared with the same questions and no tools at all;
* tool choice: the default tool set plus five editor tools; each prompt needs one
  specific tool, and the model's first call must be that tool in at least 80 % of
  the prompts.

Temperature 0, so both runs are reproducible; answers are short.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bench.toolprompts import EDITOR_TOOLS, PLAIN_QUESTIONS, TOOL_PROMPTS
from tests.support import SidecarClient, start_sidecar

pytestmark = [pytest.mark.model, pytest.mark.timeout(400)]

EDITOR_CAPABILITIES = {"fs": {"readTextFile": True, "writeTextFile": True}}


@pytest.fixture
async def editor(home: Path) -> AsyncIterator[SidecarClient]:
    client = await start_sidecar(home, initialize=False)
    try:
        await client.call(
            "initialize", {"protocolVersion": 1, "clientCapabilities": EDITOR_CAPABILITIES}
        )

        async def tool_call(params: dict[str, Any]) -> dict[str, Any]:
            return {"content": [{"type": "text", "text": f"{params['name']}: done."}]}

        async def permission(params: dict[str, Any]) -> dict[str, Any]:
            return {"outcome": {"outcome": "cancelled"}}

        client.on_request("tool/call", tool_call)
        client.on_request("session/request_permission", permission)
        yield client
    finally:
        await client.stop()


def sensible(answer: str, words: tuple[str, ...]) -> bool:
    low = answer.lower()
    return any(w in low for w in words)


async def ask_all(client: SidecarClient, cwd: str, **options: Any) -> tuple[int, list[str]]:
    """Each plain question in a new session; (sensible answers, report lines)."""
    good = 0
    lines: list[str] = []
    for question, words in PLAIN_QUESTIONS:
        sid = await client.new_session(cwd, maxTokens=40, temperature=0.0, **options)
        result = await client.prompt(sid, question, timeout=120)
        answer = client.text_of(sid).strip()
        ok = sensible(answer, words)
        good += ok
        offers = result["_meta"]["threadline"]["toolOffers"]
        lines.append(f"{'ok ' if ok else 'BAD'} {question!r} -> {answer[:60]!r} offers={offers}")
    return good, lines


async def test_plain_questions_answer_as_well_as_without_tools(
    editor: SidecarClient, tmp_path: Path
) -> None:
    cwd = str(tmp_path)
    with_tools, report = await ask_all(editor, cwd)
    without, bare = await ask_all(editor, cwd, builtinTools=False)
    n = len(PLAIN_QUESTIONS)
    print(f"\nplain questions answered sensibly: {with_tools}/{n} with the default tool set")
    print("\n".join(report))
    print(f"plain questions answered sensibly: {without}/{n} with no tools")
    print("\n".join(bare))
    assert n >= 10
    assert with_tools >= without, (with_tools, without)
    assert without >= n // 2, "the model itself answers most of these"


async def test_the_right_tool_is_called_first(editor: SidecarClient, tmp_path: Path) -> None:
    cwd = str(tmp_path)
    (tmp_path / "README.md").write_text("# Demo\nA demo project.\n")
    right = 0
    lines: list[str] = []
    for prompt, tool in TOOL_PROMPTS:
        sid = await editor.new_session(
            cwd, tools=EDITOR_TOOLS, toolBudget=1, maxTokens=32, temperature=0.0
        )
        result = await editor.prompt(sid, prompt, timeout=180)
        history = (await editor.call("session/history", {"sessionId": sid}))["messages"]
        calls = [b["name"] for m in history for b in m["content"] if b["type"] == "tool_use"]
        first = calls[0] if calls else None
        right += first == tool
        offered = result["_meta"]["threadline"]["toolOffers"][0]["offered"]
        lines.append(f"{'ok ' if first == tool else 'BAD'} {prompt!r}: {first} offered={offered}")
    rate = right / len(TOOL_PROMPTS)
    print(f"\nright first tool call: {right}/{len(TOOL_PROMPTS)} = {rate:.0%}")
    print("\n".join(lines))
    assert len(TOOL_PROMPTS) >= 10
    assert rate >= 0.8, rate
