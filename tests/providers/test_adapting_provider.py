"""The OpenAI-compatible provider adapts to what a server can do, against a real
loopback HTTP server (:mod:`tests.providers.fault_server`): an empty answer to a
request that offers tools is retried without streaming, then without tools; what
worked is remembered in the home folder; an answer that stays empty is a
``ProviderError``, never a silent empty end of turn."""

from __future__ import annotations

from pathlib import Path

from tests.providers.fault_server import FaultServer, ok
from tests.providers.helpers import collect, errors, text_of
from threadline.providers.base import ChatMessage, ChatRequest, ToolCallFinal, ToolSpec
from threadline.providers.openai_compat import OpenAICompatProvider, OpenAIOptions
from threadline.providers.traits import TraitStore, server_key

WEATHER = ToolSpec(
    "get_weather",
    "Get the weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}},
)


def provider(fault: FaultServer, store: TraitStore, **options: object) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        OpenAIOptions(
            model="m",
            model_id="local-server:m",
            base_url=fault.base_url,
            traits=store,
            **options,  # type: ignore[arg-type]
        )
    )


def asking(*, tools: bool) -> ChatRequest:
    return ChatRequest(
        [ChatMessage("user", "What is the weather in Paris?")], tools=[WEATHER] if tools else []
    )


async def test_an_empty_tool_stream_is_retried_without_streaming_and_remembered(
    fault: FaultServer, tmp_path: Path
) -> None:
    store = TraitStore(tmp_path / "servers.json")
    fault.push(ok(), ok(tool_call={"name": "get_weather", "arguments": {"city": "Paris"}}))
    events = await collect(provider(fault, store), asking(tools=True))
    assert not errors(events)
    [call] = [e for e in events if isinstance(e, ToolCallFinal)]
    assert call.name == "get_weather" and call.arguments == {"city": "Paris"}
    assert [r.body["stream"] for r in fault.chat_requests()] == [True, False]
    assert store.get(server_key(fault.base_url, "m")).stream_tools is False

    # A new provider (a new process) starts without streaming when tools are offered.
    fault.push(ok("Sunny."))
    again = provider(fault, TraitStore(tmp_path / "servers.json"))
    assert text_of(await collect(again, asking(tools=True))) == "Sunny."
    assert fault.chat_requests()[-1].body["stream"] is False
    assert text_of(await collect(again, asking(tools=False))) == "Hello from the fault server."
    assert fault.chat_requests()[-1].body["stream"] is True


async def test_a_text_answer_the_server_leaves_empty_is_asked_for_without_tools(
    fault: FaultServer, tmp_path: Path
) -> None:
    """llama-cpp-python's chatml-function-calling empties text answers to requests
    that offer tools: the last retry asks with ``tool_choice: "none"``."""
    store = TraitStore(tmp_path / "servers.json")
    fault.push(ok(), ok(), ok("It is sunny."))
    events = await collect(provider(fault, store), asking(tools=True))
    assert not errors(events) and text_of(events) == "It is sunny."
    bodies = [r.body for r in fault.chat_requests()]
    assert [(b["stream"], b.get("tool_choice")) for b in bodies] == [
        (True, "auto"),
        (False, "auto"),
        (True, "none"),
    ]


async def test_an_answer_that_stays_empty_is_a_provider_error(
    fault: FaultServer, tmp_path: Path
) -> None:
    store = TraitStore(tmp_path / "servers.json")
    fault.default = ok()
    events = await collect(provider(fault, store), asking(tools=True))
    [error] = errors(events)
    assert error.reason == "empty_answer" and "without tools" in error.message
    assert len(fault.chat_requests()) == 3
    events = await collect(provider(fault, store), asking(tools=False))
    assert [e.reason for e in errors(events)] == ["empty_answer"]
    assert store.get(server_key(fault.base_url, "m")).stream_tools is None  # nothing learned


async def test_configured_settings_win_over_learning(fault: FaultServer, tmp_path: Path) -> None:
    store = TraitStore(tmp_path / "servers.json")
    fault.push(ok("Fine."))
    p = provider(fault, store, stream_tools=True, tool_results="user")
    assert text_of(await collect(p, asking(tools=True))) == "Fine."
    assert fault.chat_requests()[0].body["stream"] is True
    assert p.tool_results() == "user"
    assert not (tmp_path / "servers.json").exists()
