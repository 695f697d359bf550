"""Golden wire fixtures of ACP v2 connections: one per method of the v2 table
(``tests/golden/v2/methods``) and one per ``session/update`` kind v2 connections are
sent (``tests/golden/v2/session_update``), as ``test_golden.py`` keeps v1's.

Each fixture validates against the v2 models with no top-level key they do not define;
what the server writes through a model is written back unchanged; each update fixture
is exactly what the v2 projection (``rpc/v2/projection.py``) makes of the same event;
and each ``_threadline/…`` verb's fixture is its v1 fixture with only the ``_meta``
moved. ``THREADLINE_GOLDEN_WRITE=1`` rewrites the update and verb fixtures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.wire import check_model, old_meta
from tests.golden.samples import CALL, EDIT, EDITED, MID, PLAN_ENTRIES, READ, RESULT, SID, SUMMARY
from threadline.engine import events
from threadline.rpc.v2.connection import permission_request
from threadline.rpc.v2.meta import v2_deep
from threadline.rpc.v2.projection import ProjectionV2
from threadline.rpc.wire import wire
from threadline.tools.base import CommandShown
from threadline_protocol import methods as pm
from threadline_protocol.acp_v2 import UPDATE_KINDS, SessionNotificationV2
from threadline_protocol.acp_v2_methods import METHODS_V2, OWN, SAME, VERBS

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
METHOD_DIR = GOLDEN / "v2" / "methods"
UPDATE_DIR = GOLDEN / "v2" / "session_update"
WRITE = bool(os.environ.get("THREADLINE_GOLDEN_WRITE"))

USER = {
    "messageId": "msg_01a20b0c5e84aa11bb22cc33dd55",
    "turnId": "u1",
    "role": "user",
    "content": [{"type": "text", "text": "What does main.py do?"}],
}
ANSWER = {
    "messageId": MID,
    "turnId": "a1",
    "role": "assistant",
    "content": [{"type": "thought", "text": "Read it."}, {"type": "text", "text": "It prints hi."}],
}
OPTIONS = [
    pm.SessionConfigOption(
        id="mode",
        name="Mode",
        category="mode",
        current_value="plan",
        options=[
            pm.ConfigSelectOption(value="plan", name="Plan"),
            pm.ConfigSelectOption(value="code", name="Code"),
        ],
    )
]
"""The session's options when its mode became ``plan`` (v1's models: the engine's)."""


def events_for(session_id: str) -> dict[str, list[events.Event]]:
    """The events each update fixture is made from (several: a state shown once, the
    output of a running call appended)."""
    grown = ({"type": "content", "content": {"type": "text", "text": "collected 3 items\n"}},)
    more = ({"type": "content", "content": {"type": "text", "text": "collected 3 items\nok\n"}},)
    run = ("pytest -q", "/home/ada/project")
    first, second = "collected 3 items\n", "collected 3 items\nok\n"
    cut = "collected 3 items\n… 812 bytes left out …\nok\n"
    ran = {
        **RESULT,
        "toolName": "run_command",
        "content": [{"type": "text", "text": f"$ pytest -q\n{second}\n[exit code 0]"}],
        "rawOutput": {"command": "pytest -q", "exitCode": 0, "signal": None, "ranIn": "sidecar"},
    }
    return {
        "user_message": [events.PromptStored(USER)],
        "agent_message_chunk": [events.MessageChunk(MID, "a1", "It prints")],
        "agent_thought_chunk": [events.MessageChunk(MID, "a1", "Read it.", thought=True)],
        "agent_message": [events.Replayed(ANSWER)],
        "agent_thought": [events.Replayed(ANSWER)],
        "agent_message.summary": [events.Compacted(MID, "a1", SUMMARY)],
        "state_update": [events.SessionInfo("2026-11-24T00:00:00.000Z", state="running")],
        "state_update.requires_action": [
            events.SessionInfo("2026-11-24T00:00:00.000Z", state="requires_action")
        ],
        "state_update.idle": [events.WorkEnded("end_turn")],
        "state_update.failed": [events.WorkEnded(None, (-32011, "the model server is down"))],
        "tool_call_update": [events.ToolCallStarted(READ, "a1")],
        "tool_call_update.diff": [events.ToolCallStarted(EDIT, "a1")],
        "tool_call_update.completed": [events.ToolFinished(RESULT)],
        "tool_call_update.edited": [events.ToolFinished(EDITED)],
        "tool_call_update.cancelled": [
            events.ToolFinished({**RESULT, "status": "cancelled", "isError": True})
        ],
        "tool_call_update.output": [events.ToolProgress(CALL, grown)],
        "tool_call_content_chunk": [
            events.ToolProgress(CALL, grown),
            events.ToolProgress(CALL, more),
        ],
        "terminal_update": [events.ToolProgress(CALL, grown, command=CommandShown(*run, first))],
        "terminal_output_chunk": [
            events.ToolProgress(CALL, grown, command=CommandShown(*run, first)),
            events.ToolProgress(CALL, more, command=CommandShown(*run, second)),
        ],
        "terminal_update.snapshot": [
            events.ToolProgress(CALL, more, command=CommandShown(*run, second)),
            events.ToolProgress(CALL, grown, command=CommandShown(*run, cut)),
        ],
        "terminal_update.exited": [
            events.ToolProgress(CALL, more, command=CommandShown(*run, second)),
            events.ToolFinished(ran),
        ],
        "tool_call_update.terminal": [
            events.ToolProgress(CALL, more, command=CommandShown(*run, second)),
            events.ToolFinished(ran),
        ],
        "plan_update": [events.ToolFinished({**RESULT, "plan": PLAN_ENTRIES})],
        "available_commands_update": [
            events.AvailableCommands(
                (("compact", "Summarise", "instructions"), ("fork", "Fork", None))
            )
        ],
        "config_option_update": [events.ConfigOptions(OPTIONS)],
        "session_info_update": [
            events.SessionInfo(
                "2026-11-24T00:00:00.000Z", title="Read main.py", model="openai:gpt-4o"
            )
        ],
        "usage_update": [events.Usage(876, 8192)],
        "usage_update.cost": [events.Usage(876, 8192, 0.0123456789)],
    }


def built() -> dict[str, dict[str, Any]]:
    """Each fixture's update: the last the projection made of its events."""
    out: dict[str, dict[str, Any]] = {}
    for name, shown in events_for(SID).items():
        projection = ProjectionV2()
        made = [u for e in shown for u in projection.session_updates(SID, e)]
        kind = name.split(".")[0]
        out[name] = [u for u in made if u["sessionUpdate"] == kind][-1]
    return out


def method_file(name: str) -> Path:
    return METHOD_DIR / (name.replace("/", "_").replace("$", "") + ".json")


def test_every_v2_method_and_update_kind_has_a_fixture() -> None:
    missing = [m for m in METHODS_V2 if not method_file(m).exists()]
    assert not missing, f"no golden fixture for {missing}"
    stray = {p.name for p in METHOD_DIR.iterdir()} - {method_file(m).name for m in METHODS_V2}
    assert not stray, stray
    files = {p.stem.split(".")[0] for p in UPDATE_DIR.glob("*.json")}
    assert set(UPDATE_KINDS) <= files, set(UPDATE_KINDS) - files


@pytest.mark.parametrize("method", list(METHODS_V2))
def test_v2_method_fixture_fits_the_v2_models(method: str) -> None:
    fixture = json.loads(method_file(method).read_text())
    spec = METHODS_V2[method]
    assert fixture["method"] == method
    found = check_model(spec.params, fixture["params"], "params")
    if spec.kind == "request":
        found += check_model(spec.result, fixture["result"], "result")
    assert found == []
    assert old_meta(fixture, method) == []


SAME_AS_V1 = {OWN + verb: v1 for verb, v1 in VERBS.items()} | {m: m for m in SAME}


@pytest.mark.parametrize("method", list(SAME_AS_V1))
def test_verbs_and_same_methods_are_their_v1_fixture_with_the_meta_moved(method: str) -> None:
    v1 = json.loads(
        (GOLDEN / "methods" / (SAME_AS_V1[method].replace("/", "_") + ".json")).read_text()
    )
    expected = {"method": method, **{k: v2_deep(v) for k, v in v1.items() if k != "method"}}
    path = method_file(method)
    if WRITE:
        path.write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n")
    assert json.loads(path.read_text()) == expected, "THREADLINE_GOLDEN_WRITE=1 rewrites it"


WRITTEN = [
    name
    for name, spec in METHODS_V2.items()
    if not name.startswith(OWN) and spec.kind == "request" and spec.direction == "client_to_server"
]


@pytest.mark.parametrize("method", WRITTEN)
def test_v2_result_models_write_the_golden_wire(method: str) -> None:
    fixture = json.loads(method_file(method).read_text())["result"]
    model = METHODS_V2[method].result
    if model is None:
        assert fixture is None
        return
    assert wire(model.model_validate(fixture)) == fixture


def test_a_permission_request_is_v1s_with_its_subject() -> None:
    v1 = json.loads((GOLDEN / "methods" / "session_request_permission.json").read_text())
    v2 = json.loads(method_file("session/request_permission").read_text())
    assert permission_request(v1["params"]) == v2["params"]


@pytest.mark.parametrize("name", sorted(events_for(SID)))
def test_v2_projection_builds_the_golden_update(name: str) -> None:
    path = UPDATE_DIR / f"{name}.json"
    made = {"sessionId": SID, "update": built()[name]}
    if WRITE:
        path.write_text(json.dumps(made, indent=2, ensure_ascii=False) + "\n")
    assert json.loads(path.read_text()) == made, "THREADLINE_GOLDEN_WRITE=1 rewrites it"


@pytest.mark.parametrize("path", sorted(UPDATE_DIR.glob("*.json")), ids=lambda p: p.stem)
def test_v2_update_fixture_fits_the_v2_models(path: Path) -> None:
    fixture = json.loads(path.read_text())
    assert fixture["update"]["sessionUpdate"] == path.stem.split(".")[0]
    assert check_model(SessionNotificationV2, fixture, "session/update") == []
    assert old_meta(fixture, path.stem) == []
