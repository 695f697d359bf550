"""``update_plan``: the entries it accepts, fills in and refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tools.fakes import FakeEditor, make_ctx
from threadline.tools.plan import MAX_ENTRIES, UpdatePlan


async def test_the_whole_list_becomes_the_plan(tmp_path: Path) -> None:
    entries = [
        {"content": "Run the failing test", "priority": "high", "status": "completed"},
        {"content": "Fix add()", "status": "in_progress"},
        "Run the tests again",
    ]
    out = await UpdatePlan().run({"entries": entries}, make_ctx(tmp_path, FakeEditor()))
    assert not out.is_error
    assert out.plan == [
        {"content": "Run the failing test", "priority": "high", "status": "completed"},
        {"content": "Fix add()", "priority": "medium", "status": "in_progress"},
        {"content": "Run the tests again", "priority": "medium", "status": "pending"},
    ]
    assert out.content[0]["text"] == (
        "Plan updated (1 of 3 done):\n[x] Run the failing test\n[~] Fix add()\n"
        "[ ] Run the tests again"
    )
    assert UpdatePlan().title({"entries": entries}) == "Update plan (3 steps)"


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([], "non-empty list"),
        ("do it", "non-empty list"),
        ([{"content": ""}], "entry 1: content"),
        ([{"content": "x", "status": "done"}], "status must be one of"),
        ([{"content": "x", "priority": "urgent"}], "priority must be one of"),
        ([5], "entry 1 must be an object"),
        (["x"] * (MAX_ENTRIES + 1), f"at most {MAX_ENTRIES}"),
    ],
)
async def test_bad_entries_are_refused(tmp_path: Path, entries: Any, message: str) -> None:
    out = await UpdatePlan().run({"entries": entries}, make_ctx(tmp_path, FakeEditor()))
    assert out.is_error and message in out.content[0]["text"]
    assert out.plan is None
