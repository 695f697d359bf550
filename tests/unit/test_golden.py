"""Golden wire fixtures: one per method (``tests/golden/methods``) and one per
``session/update`` kind (``tests/golden/session_update``), as the ACP SDKs keep them.

Every method of the protocol's table and every update kind of its union must have a
fixture; each fixture must pass ACP's official schema (for ACP's methods) and
Threadline's; and each update fixture must be exactly what the projection
(``rpc/projection.py``) builds from the same input, so a change of wire shape shows up
here as a diff. ``THREADLINE_GOLDEN_WRITE=1`` rewrites the update fixtures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, get_args

import pytest

from tests.conformance import check_acp, check_threadline
from tests.golden.samples import (
    CALL,
    EDIT,
    EDITED,
    MID,
    PLAN_ENTRIES,
    READ,
    RESULT,
    SID,
    SUMMARY,
    config_options,
)
from threadline.engine import events
from threadline.rpc import projection as updates
from threadline.rpc.server import wire
from threadline_protocol.base import Prewritten
from threadline_protocol.methods import METHODS
from threadline_protocol.updates import SessionUpdate

IMAGE_HASH = "ec38a3b580791e107b8dd95fe5571dd151ca42631c922926c78cc85105c252cb"
GOLDEN = Path(__file__).resolve().parent.parent / "golden"
METHOD_DIR = GOLDEN / "methods"
UPDATE_DIR = GOLDEN / "session_update"

# The projection's output for fixed inputs; the key names the fixture file.
BUILT: dict[str, dict[str, Any]] = {
    "agent_message_chunk": updates.message_chunk("agent_message_chunk", MID, "a1", "It prints"),
    "agent_thought_chunk": updates.message_chunk("agent_thought_chunk", MID, "a1", "Read it."),
    "user_message_chunk": updates.content_chunk(
        "user_message_chunk", MID, "u1", {"type": "text", "text": "What does main.py do?"}
    ),
    "user_message_chunk.image": updates.content_chunk(
        "user_message_chunk",
        MID,
        "u1",
        {
            "type": "image",
            "mimeType": "image/png",
            "data": "",
            "uri": "threadline-blob:" + IMAGE_HASH,
            "_meta": {
                "threadline": {
                    "image": {"blob": IMAGE_HASH, "width": 1280, "height": 720, "size": 86016}
                }
            },
        },
    ),
    "session_info_update.warning": updates.session_info(
        events.SessionInfo(
            "2026-11-24T00:00:00.000Z",
            warning="local:smollm2-135m cannot see images: it reads a placeholder such as "
            "[image: 1280×720 PNG, 84 KB — this model cannot see images] instead",
        )
    ),
    "tool_call": updates.tool_call(READ, "a1"),
    "tool_call.exit_signal": updates.tool_call(
        {"type": "exit_signal", "id": CALL, "name": "task_done", "arguments": {"ok": True}}, "a1"
    ),
    "tool_call_update": updates.tool_result(RESULT),
    "tool_call_update.in_progress": updates.tool_progress(CALL, "in_progress"),
    "tool_call.diff": updates.tool_call(EDIT, "a1"),
    "tool_call_update.diff": updates.tool_result(EDITED),
    "tool_call_update.output": updates.tool_progress(
        CALL,
        "in_progress",
        [{"type": "content", "content": {"type": "text", "text": "collected 3 items\n"}}],
    ),
    "tool_call_update.terminal": updates.tool_progress(
        CALL, "in_progress", [{"type": "terminal", "terminalId": "term_1"}]
    ),
    "plan": updates.plan(PLAN_ENTRIES),
    "current_mode_update": updates.current_mode("plan"),
    "config_option_update": updates.config_options(config_options()),
    "notice": updates.notice("retrying in 2 s"),
    "tool_call_update.cancelled": updates.tool_result(
        {
            **RESULT,
            "content": [{"type": "text", "text": "Tool call cancelled: cancelled by the user."}],
            "isError": True,
            "status": "cancelled",
            "rawOutput": None,
        }
    ),
    "usage_update": updates.usage_update(876, 8192),
    "usage_update.cost": updates.usage_update(876, 8192, 0.0123456789),
    "session_info_update": updates.session_info(
        events.SessionInfo("2026-11-24T00:00:00.000Z", title="Read main.py")
    ),
    "session_info_update.status": updates.session_info(
        events.SessionInfo("2026-11-24T00:00:00.000Z", status="retrying in 2 s")
    ),
    "session_info_update.state": updates.session_info(
        events.SessionInfo(
            "2026-11-24T00:00:00.000Z",
            state="running",
            owner=events.Owner(4242, "laptop", "2026-11-24T00:00:00.000Z", here=False),
            queue=(
                events.Queued(
                    "msg_q1",
                    "queue",
                    "queued",
                    [{"type": "text", "text": "Then run the tests."}],
                    "2026-11-24T00:00:01.000Z",
                ),
            ),
        )
    ),
    "available_commands_update": updates.available_commands(
        [("compact", "Summarise older history", "optional instructions"), ("fork", "Fork", None)]
    ),
    "compaction_update": updates.compacted(
        MID,
        "a1",
        SUMMARY,
        shown=True,
    ),
    "agent_message_chunk.summary": updates.compacted(
        MID,
        "a1",
        SUMMARY,
        shown=False,
    ),
    "compaction_update.failed": updates.compaction(
        "cmp_01a20b0c5e84aa11bb22cc33dd44", "failed", error="the model wrote an empty summary"
    ),
}


def update_kinds() -> list[str]:
    union = get_args(get_args(SessionUpdate)[0])
    return [m.model_fields["session_update"].default for m in union]


def method_file(name: str) -> Path:
    return METHOD_DIR / (name.replace("/", "_").replace("$", "") + ".json")


def problems(method: str, part: str, value: Any) -> list[str]:
    return check_acp(method, part, value) + check_threadline(method, part, value)


def test_every_method_and_update_kind_has_a_fixture() -> None:
    missing = [m for m in METHODS if not method_file(m).exists()]
    assert not missing, f"no golden fixture for {missing}"
    stray = {p.name for p in METHOD_DIR.iterdir()} - {method_file(m).name for m in METHODS}
    assert not stray, f"fixtures for methods the protocol lacks: {stray}"
    files = {p.stem.split(".")[0] for p in UPDATE_DIR.glob("*.json")}
    assert set(update_kinds()) <= files, set(update_kinds()) - files


@pytest.mark.parametrize("method", list(METHODS))
def test_method_fixture_passes_both_schemas(method: str) -> None:
    fixture = json.loads(method_file(method).read_text())
    assert fixture["method"] == method
    spec = METHODS[method]
    found = problems(method, "params", fixture["params"])
    if spec.kind == "request":
        found += problems(method, "result", fixture["result"])
    assert found == []


@pytest.mark.parametrize("name", sorted(BUILT))
def test_projection_builds_the_golden_update(name: str) -> None:
    path = UPDATE_DIR / f"{name}.json"
    built = {"sessionId": SID, "update": BUILT[name]}
    if os.environ.get("THREADLINE_GOLDEN_WRITE"):
        path.write_text(json.dumps(built, indent=2, ensure_ascii=False) + "\n")
    assert json.loads(path.read_text()) == built, "THREADLINE_GOLDEN_WRITE=1 rewrites it"


@pytest.mark.parametrize("path", sorted(UPDATE_DIR.glob("*.json")), ids=lambda p: p.stem)
def test_update_fixture_passes_both_schemas(path: Path) -> None:
    fixture = json.loads(path.read_text())
    assert fixture["update"]["sessionUpdate"] == path.stem.split(".")[0]
    assert problems("session/update", "params", fixture) == []


WRITTEN = [
    (name, part)
    for name, spec in METHODS.items()
    for part in ("params", "result")
    if getattr(spec, part) is not None
    and (part == "result") == (spec.direction == "client_to_server")
    and spec.kind == "request"
]
"""What the server writes through a model: the results it answers, the params of the
requests it sends."""


@pytest.mark.parametrize(("method", "part"), WRITTEN, ids=lambda v: str(v))
def test_model_writes_the_golden_wire(method: str, part: str) -> None:
    """The model the server fills, written as ``rpc/`` writes it, is the fixture: no
    key a default adds, none lost, none renamed."""
    fixture = json.loads(method_file(method).read_text())[part]
    model = getattr(METHODS[method], part)
    if issubclass(model, Prewritten):  # filled with wire data, never with models
        model.model_validate(fixture)
        fields = {f.alias or name: name for name, f in model.model_fields.items()}
        built = model.model_construct(**{fields[k]: v for k, v in fixture.items()})
    else:
        built = model.model_validate(fixture)
    assert wire(built) == fixture
