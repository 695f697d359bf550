"""Images through the real sidecar to recording HTTP servers on loopback: the exact
request bodies an OpenAI-compatible chat completions server and an Anthropic Messages
server get for a prompt with an image and for a tool result that holds one.

OpenAI's documented shape: a user message's ``content`` is a list of parts, text as
``{"type": "text", "text"}`` and images as ``{"type": "image_url", "image_url": {"url":
"data:<mime>;base64,<data>"}}``; a ``role: "tool"`` message's content is text only, so a
tool's image is restructured (the result says it follows, a user message after the
results carries it). Anthropic's: an ``image`` block ``{"type": "image", "source":
{"type": "base64", "media_type", "data"}}`` in a user message, and in a ``tool_result``
block's ``content`` list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.imagefiles import b64, image_block, png
from tests.providers.anthropic_replay import (
    AnthropicReplay,
    Reply,
    message_end,
    message_start,
    tool_use,
)
from tests.providers.anthropic_replay import text as text_events
from tests.providers.fault_server import FaultServer, ok
from tests.support import SidecarClient, start_sidecar

SHOT = png(64, 32)
TOOL_SHOT = png(40, 30, shade=9)
SCREENSHOT = {
    "name": "take_screenshot",
    "description": "A screenshot of the editor",
    "inputSchema": {"type": "object", "properties": {}},
}


async def _image_then_tool_image(client: SidecarClient, model: str) -> None:
    """Two prompts: one with a screenshot, then one whose client tool returns one."""

    async def shot(params: dict[str, Any]) -> dict[str, Any]:
        assert params["name"] == "take_screenshot"
        return {"content": [image_block(TOOL_SHOT)]}

    client.on_request("tool/call", shot)
    sid = await client.new_session(model=model, tools=[SCREENSHOT], builtinTools=False)
    prompt = [{"type": "text", "text": "What is in this screenshot?"}, image_block(SHOT)]
    done = await client.call("session/prompt", {"sessionId": sid, "prompt": prompt})
    assert done["stopReason"] == "end_turn"
    assert (await client.prompt(sid, "Take a screenshot and look."))["stopReason"] == "end_turn"


@pytest.mark.timeout(120)
async def test_openai_compatible_server_gets_image_parts_and_a_restructured_tool_image(
    fault: FaultServer, isolated_config: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_config.write_text(
        f'[providers.openai]\nbase_url = "{fault.base_url}"\n\n'
        '[models.eyes]\nprovider = "openai"\nmodel = "vision-model"\nimages = true\n'
        'tool_results = "native"\nstream_tools = true\n'
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-images")
    monkeypatch.setenv("THREADLINE_MODEL", "eyes")
    fault.push(ok("A red box."), ok(tool_call={"name": "take_screenshot", "arguments": {}}))
    fault.push(ok("I see it."))
    client = await start_sidecar(home, initialize=False)
    try:
        caps = (await client.initialize())["agentCapabilities"]
        assert caps["promptCapabilities"]["image"] is True
        await _image_then_tool_image(client, "eyes")
    finally:
        await client.stop()

    first, _, third = (r.body for r in fault.chat_requests())
    assert first["messages"][1:] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this screenshot?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(SHOT)}"}},
            ],
        }
    ]
    call_id = third["messages"][4]["tool_calls"][0]["id"]
    assert third["messages"][3:] == [
        {"role": "user", "content": "Take a screenshot and look."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "take_screenshot", "arguments": "{}"},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": call_id,
            "content": "[image: sent in the next user message]",
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "The image take_screenshot returned:"},
                {
                    "type": "image_url",
                    "image_url": {"url": f"data:image/png;base64,{b64(TOOL_SHOT)}"},
                },
            ],
        },
    ]
    # the first prompt's image is sent again, as stored (from its blob), on later calls
    assert third["messages"][1] == first["messages"][1]


@pytest.mark.timeout(120)
async def test_anthropic_server_gets_image_blocks_in_the_prompt_and_in_the_tool_result(
    replay: AnthropicReplay, isolated_config: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_config.write_text(
        f'[providers.anthropic]\nbase_url = "{replay.base_url}"\n\n'
        '[models.claude]\nprovider = "anthropic"\nmodel = "claude-replay"\n'
        "prompt_cache = false\n"
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-images")
    replay.push(
        Reply([*message_start(), *text_events(0, ["A red box."]), *message_end()]),
        Reply(
            [
                *message_start(),
                *tool_use(0, "toolu_01", "take_screenshot", ["{}"]),
                *message_end("tool_use"),
            ]
        ),
        Reply([*message_start(), *text_events(0, ["I see it."]), *message_end()]),
    )
    client = await start_sidecar(home)
    try:
        await _image_then_tool_image(client, "claude")
    finally:
        await client.stop()

    first, _, third = (r.body for r in replay.message_requests())
    shot = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": b64(SHOT)},
    }
    assert first["messages"] == [
        {"role": "user", "content": [shot, {"type": "text", "text": "What is in this screenshot?"}]}
    ]
    tool_shot = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": b64(TOOL_SHOT)},
    }
    assert third["messages"][0] == first["messages"][0]
    call_id = third["messages"][3]["content"][0]["id"]  # the engine names its calls
    assert third["messages"][2:] == [
        {"role": "user", "content": [{"type": "text", "text": "Take a screenshot and look."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": call_id, "name": "take_screenshot", "input": {}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": [tool_shot]}],
        },
    ]
