"""Provider-neutral messages and tool choice in the chat completions request shape."""

from __future__ import annotations

import json
from typing import Any, Literal

from .base import ChatMessage, ChatRequest, ImagePart, system_first


def to_openai_messages(
    messages: list[ChatMessage],
    *,
    tool_results: Literal["native", "user"] = "native",
    send_reasoning: bool = False,
) -> list[dict[str, Any]]:
    """Provider-neutral messages in the chat completions shape."""
    out: list[dict[str, Any]] = []
    for m in system_first(messages):
        if m.role == "user" and m.images:
            out.append({"role": "user", "content": content_parts(m.content, m.images)})
        elif m.role in ("system", "user"):
            out.append({"role": m.role, "content": m.content})
        elif m.role == "assistant":
            # "" rather than null beside tool calls: llama-cpp-python rejects null.
            msg: dict[str, Any] = {"role": "assistant", "content": m.content}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": c.raw_arguments or json.dumps(c.arguments),
                        },
                    }
                    for c in m.tool_calls
                ]
            reasoning = "".join(str(t.get("text", "")) for t in m.thoughts if not t.get("redacted"))
            if send_reasoning and reasoning:
                msg["reasoning_content"] = reasoning
            out.append(msg)
        else:
            content = m.content
            if m.is_error and not content.lower().startswith("error"):
                content = f"Error: {content}"
            if tool_results == "user":
                name = m.tool_name or "tool"
                out.append(
                    {
                        "role": "user",
                        "content": f"Result of {name} (call {m.tool_call_id}):\n{content}",
                    }
                )
            else:
                out.append(
                    {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": content}
                )
    return out


def content_parts(text: str, images: list[ImagePart]) -> list[dict[str, Any]]:
    """A user message's text and images as chat completions content parts (images as
    ``data:`` URLs; a tool result's images come here too, in the user message that
    follows the results: `engine.mutations.MultimodalToolResult`)."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts += [
        {"type": "image_url", "image_url": {"url": f"data:{i.mime_type};base64,{i.data}"}}
        for i in images
    ]
    return parts


def tool_choice(request: ChatRequest) -> Any:
    choice = str(request.tool_choice)
    if choice in ("auto", "none", "required"):
        return choice
    if any(t.name == choice for t in request.tools):
        return {"type": "function", "function": {"name": choice}}
    return "auto"
