"""``session/context``: what the next request holds, by part, in the provider's own
token counts (the desktop's context picture draws it before and after compacting)."""

from __future__ import annotations

from typing import Any

from tests.support import SidecarClient, scripted


def parts_add_up(answer: dict[str, Any]) -> dict[str, int]:
    parts = answer["parts"]
    assert sum(parts.values()) == answer["used"], answer
    assert answer["size"] > answer["used"] > 0
    return parts


async def test_context_by_part_before_and_after_a_compaction(
    sidecar: SidecarClient, tmp_path: Any
) -> None:
    long = "A paragraph about the garden, the weather and the river. " * 12
    model = scripted([{"text": long}])
    sid = await sidecar.new_session(
        cwd=str(tmp_path), model=model, systemPrompt="You are a careful gardener."
    )
    empty = parts_add_up(await sidecar.call("session/context", {"sessionId": sid}))
    assert empty["system"] > 0 and empty["summary"] == 0
    for i in range(4):
        await sidecar.prompt(sid, f"Tell me about the garden and the read_file tool, part {i}.")
    before = parts_add_up(await sidecar.call("session/context", {"sessionId": sid}))
    assert before["history"] > empty["history"] and before["summary"] == 0
    assert before["tools"] > 0, "the offered tool definitions are counted apart"
    await sidecar.call("session/compact", {"sessionId": sid, "keepTurns": 1})
    after = parts_add_up(await sidecar.call("session/context", {"sessionId": sid}))
    assert after["summary"] > 0, "the summary is counted apart"
    assert after["history"] < before["history"], "compaction took history out"
    assert after["system"] == before["system"]
