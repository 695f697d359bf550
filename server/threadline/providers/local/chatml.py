"""The prompt, rendered in ChatML (the model's own template) as text and special tokens.

Rendered here, not by ``create_chat_completion``: llama-cpp's
``chatml-function-calling`` handler drops ``tool`` messages, cannot stream when tools
are offered, ignores ``max_tokens`` on tool calls and constrains "message:" replies to
an empty string. The function-calling system block is that handler's, so the model
sees the protocol :mod:`.tool_calls` drives.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..base import ChatMessage, ChatRequest, ToolCallFinal, ToolSpec

DEFAULT_SYSTEM_PROMPT = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"

# The function-calling system block of llama-cpp's chatml-function-calling format.
_TOOLS_HEADER = "\n\nYou have access to the following functions:\n"
_TOOLS_FOOTER = (
    "\n\nYou can respond to users messages with either a single message or one or more"
    " function calls."
    "\n\nTo respond with a message begin the message with 'message:', use the following"
    " format:"
    "\n\nmessage:"
    "\n<message>"
    "\n\nTo respond with one or more function calls begin the message with"
    " 'functions.<function_name>:', use the following format:"
    "\n\nfunctions.<function_name>:"
    '\n{ "arg1": "value1", "arg2": "value2" }'
    "\nfunctions.<function_name>:"
    '\n{ "arg1": "value1", "arg2": "value2" }'
)


Segment = tuple[str, bool]
"""A piece of prompt text and whether it is a special token (``<|im_start|>``...)."""


def _tools_block(tools: Sequence[ToolSpec]) -> str:
    parts = [_TOOLS_HEADER]
    for t in tools:
        parts.append(f"\nfunctions.{t.name}:\n")
        if t.description:
            parts.append(f"// {t.description}\n")
        parts.append(json.dumps(t.parameters))
        parts.append("\n")
    parts.append(_TOOLS_FOOTER)
    return "".join(parts)


def _tool_names(messages: Sequence[ChatMessage]) -> dict[str, str]:
    names: dict[str, str] = {}
    for m in messages:
        for c in m.tool_calls:
            names[c.id] = c.name
    return names


def _call_text(call: ToolCallFinal) -> str:
    return f"functions.{call.name}:\n{json.dumps(call.arguments)}"


def _message_body(m: ChatMessage, tools_mode: bool, names: dict[str, str]) -> tuple[str, str]:
    """(ChatML role, text) for one message."""
    if m.role == "tool":
        name = m.tool_name or names.get(m.tool_call_id or "", "unknown")
        head = "Error from" if m.is_error else "Result of"
        return "user", f"{head} tool {name} (call {m.tool_call_id or '?'}):\n{m.content}"
    if m.role == "assistant":
        if tools_mode:
            parts: list[str] = []
            if m.content:
                parts.append(f"message:\n{m.content}")
            parts.extend(_call_text(c) for c in m.tool_calls)
            return "assistant", "\n".join(parts)
        parts = [m.content] if m.content else []
        parts.extend(
            f"[called tool {c.name} (call {c.id}) with arguments {json.dumps(c.arguments)}]"
            for c in m.tool_calls
        )
        return "assistant", "\n".join(parts)
    return m.role, m.content


def render_segments(request: ChatRequest) -> list[Segment]:
    """The ChatML prompt of ``request``, ending with the assistant generation header."""
    tools_mode = offers_tools(request)
    messages = list(request.messages)
    if not messages or messages[0].role != "system":
        messages.insert(0, ChatMessage(role="system", content=DEFAULT_SYSTEM_PROMPT))
    names = _tool_names(messages)
    # The functions go with the last system message: the engine's tool section after
    # the history, so the history stays the same prefix from call to call (llama.cpp
    # reuses it) while the selection changes.
    tools_at = max(i for i, m in enumerate(messages) if m.role == "system") if tools_mode else -1
    segments: list[Segment] = []
    for i, m in enumerate(messages):
        role, text = _message_body(m, tools_mode, names)
        if i == tools_at:
            text += _tools_block(request.tools)
        segments += [(IM_START, True), (f"{role}\n{text}", False), (IM_END, True), ("\n", False)]
    segments += [(IM_START, True), ("assistant\n", False)]
    return segments


def next_message_segments(messages: Sequence[ChatMessage]) -> list[Segment]:
    """``messages`` rendered without tools, then the start of the next user (or tool
    result) message: the prefix the session's next prompt begins with."""
    segments = render_segments(ChatRequest(list(messages)))[:-2]
    return [*segments, (IM_START, True), ("user\n", False)]


def offers_tools(request: ChatRequest) -> bool:
    """Whether the model is shown the functions and the call protocol; with
    ``tool_choice="none"`` earlier calls are rendered as plain text instead."""
    return bool(request.tools) and request.tool_choice == "auto"
