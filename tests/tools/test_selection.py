"""Tool selection: which tools each model call is offered (no model needed).

The ranking itself is the ``bm25s`` library's; these tests pin the behaviour built on
it: plain questions get no tools, the matching tool is offered first, ``alwaysOffer``
and ``find_tools`` results are offered whatever the request, a large model gets every
tool of a short list, and a turn's ``_meta`` says what each model call was offered.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench.toolprompts import PLAIN_QUESTIONS
from tests.support import SidecarClient, scripted
from threadline.engine.memory import SessionMemory
from threadline.providers.base import (
    LARGE_MODEL_TOOLS,
    SMALL_MODEL_TOOLS,
    ChatMessage,
    ToolCallFinal,
    ToolOfferLimits,
)
from threadline.tools.base import ToolContext, ToolOutcome
from threadline.tools.delegate import Delegate, DelegateRequest
from threadline.tools.factory import build_registry
from threadline.tools.memory import ForgetTool, RememberTool
from threadline.tools.selection import FIND_TOOLS, FOUND_PREFIX, ToolSelector


def tool(name: str, description: str, **props: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {k: {"type": "string", "description": v} for k, v in props.items()},
        },
    }


EDITOR = [
    tool("get_weather", "Get the current weather for a city", city="the city name"),
    tool("editor_get_selection", "Return the text the user has selected in the active editor."),
    tool("editor_diagnostics", "The errors and warnings the editor reports for a file."),
]


class NoChildren:
    """A delegator that is never called: selection only reads the tool's description."""

    async def delegate(self, request: DelegateRequest, ctx: ToolContext) -> ToolOutcome:
        raise AssertionError("selection never runs a tool")

    def may_delegate(self, depth: int) -> bool:
        return True


def selector(tools: list[dict[str, Any]] = EDITOR, *, delegate: bool = False) -> ToolSelector:
    """The default tool set of an editor that can write files, plus ``tools`` (and
    ``delegate``, as a session that may start children has it)."""
    none = SessionMemory(lambda _: None, dict)
    memory = [RememberTool(none), ForgetTool(none)]
    memory += [Delegate(NoChildren())] if delegate else []
    caps = {"fs": {"writeTextFile": True}}
    return ToolSelector(build_registry(tools=tools, client_capabilities=caps, extra_tools=memory))


def offered(sel: ToolSelector, *messages: ChatMessage, limits: ToolOfferLimits) -> list[str]:
    return sel.offer(list(messages), limits).names


@pytest.mark.parametrize(
    "question",
    [
        "Name two fruits.",
        "What is the capital of France?",
        "Write a haiku about the sea.",
        "List three colours.",
        "Tell me a joke.",
        "Write a Python function that adds two numbers.",
        *(question for question, _ in PLAIN_QUESTIONS),
    ],
)
def test_a_plain_question_is_offered_no_tools(question: str) -> None:
    assert offered(selector(), ChatMessage("user", question), limits=SMALL_MODEL_TOOLS) == []


@pytest.mark.parametrize("question", [question for question, _ in PLAIN_QUESTIONS])
def test_a_plain_question_is_not_delegated(question: str) -> None:
    """ "How many legs does a spider have?" once offered ``delegate`` ("read many
    files"), and the small model answered it with a tool schema."""
    sel = selector(delegate=True)
    assert offered(sel, ChatMessage("user", question), limits=SMALL_MODEL_TOOLS) == []


@pytest.mark.parametrize(
    ("prompt", "best"),
    [
        ("What is the weather in Paris?", "get_weather"),
        ("What text is selected in my editor?", "editor_get_selection"),
        ("Read the file README.md.", "read_file"),
        ("Search the workspace for TODO.", "search_text"),
        ("Remember that I use tabs.", "remember"),
        ("Run the tests.", "run_command"),
        ("run the tests", "run_command"),
        ("Run git status.", "run_command"),
        ("Replace foo with bar in file src/a.py.", "edit_file"),
        ("Change foo to bar in main.py.", "edit_file"),
        ("Make a plan with the steps for this task.", "update_plan"),
    ],
)
def test_the_matching_tool_is_offered_first(prompt: str, best: str) -> None:
    names = offered(selector(), ChatMessage("user", prompt), limits=SMALL_MODEL_TOOLS)
    assert names[0] == best
    assert names[-1] == FIND_TOOLS, "tools were left out, so find_tools is offered"
    assert len(names) <= SMALL_MODEL_TOOLS.top_k + 1


def test_the_request_is_the_latest_user_message_and_this_turns_tool_results() -> None:
    sel = selector()
    call = ToolCallFinal("c1", "read_file", {}, "{}")
    history = [
        ChatMessage("user", "What is the weather in Paris?"),
        ChatMessage("assistant", "Sunny."),
        ChatMessage("user", "Read notes.md."),
        ChatMessage("assistant", "", tool_calls=[call]),
        ChatMessage("tool", "The diagnostics show errors.", tool_call_id="c1", tool_name="x"),
    ]
    names = offered(sel, *history, limits=SMALL_MODEL_TOOLS)
    assert "get_weather" not in names
    assert "editor_diagnostics" in names and "read_file" in names


def test_always_offer_and_found_tools_are_offered_whatever_the_request() -> None:
    tools = [*EDITOR, {**tool("editor_open_buffers", "List open tabs."), "alwaysOffer": True}]
    sel = selector(tools)
    assert offered(sel, ChatMessage("user", "Hi!"), limits=SMALL_MODEL_TOOLS) == [
        "editor_open_buffers",
        FIND_TOOLS,
    ]
    found = ChatMessage(
        "tool", f"{FOUND_PREFIX}editor_diagnostics\n- ...", tool_call_id="c", tool_name=FIND_TOOLS
    )
    names = offered(sel, ChatMessage("user", "Hi!"), found, limits=SMALL_MODEL_TOOLS)
    assert set(names) == {"editor_open_buffers", "editor_diagnostics", FIND_TOOLS}


def test_a_large_model_gets_every_tool_of_a_short_list_and_a_choice_of_a_long_one() -> None:
    sel = selector()
    plain = ChatMessage("user", "Name two fruits.")
    assert len(offered(sel, plain, limits=LARGE_MODEL_TOOLS)) == len(sel.registry.specs())
    many = [tool(f"service_{i}", f"Manage cloud resource number {i}.") for i in range(40)]
    sel = selector([*EDITOR, *many])
    assert offered(sel, plain, limits=LARGE_MODEL_TOOLS) == [FIND_TOOLS]
    weather = offered(sel, ChatMessage("user", "Weather in Oslo?"), limits=LARGE_MODEL_TOOLS)
    assert weather == ["get_weather", FIND_TOOLS]


async def test_find_tools_finds_what_was_left_out() -> None:
    sel = selector()
    found = sel.find_tool.search("check errors reported by the editor")
    assert found and found[0].name == "editor_diagnostics"


async def test_a_turn_says_what_each_model_call_was_offered(sidecar: SidecarClient) -> None:
    """A scripted (large) model with 44 tools: the first call is offered the weather
    tool and find_tools; find_tools finds the diagnostics tool; the next call is
    offered it too, and the model's call to it runs."""
    many = [tool(f"service_{i}", f"Manage cloud resource number {i}.") for i in range(32)]
    ran: list[str] = []

    async def on_call(params: dict[str, Any]) -> dict[str, Any]:
        ran.append(params["name"])
        return {"content": [{"type": "text", "text": "no errors"}]}

    sidecar.on_request("tool/call", on_call)
    model = scripted(
        [{"tool_call": {"name": FIND_TOOLS, "arguments": {"query": "editor errors"}}}],
        [{"tool_call": {"name": "editor_diagnostics", "arguments": {}}}],
        [{"text": "No errors."}],
    )
    sid = await sidecar.new_session(model=model, tools=[*EDITOR, *many])
    result = await sidecar.prompt(sid, "What is the weather in Paris?")
    assert result["stopReason"] == "end_turn"
    offers = result["_meta"]["threadline"]["toolOffers"]
    assert offers[0]["offered"] == ["get_weather", FIND_TOOLS]
    assert offers[0]["leftOut"] == len(EDITOR) + len(many) + 10 - 1  # + 10 built-in
    assert "editor_diagnostics" in offers[1]["offered"]
    assert ran == ["editor_diagnostics"]
