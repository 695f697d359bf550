"""Compile a model request from a session: system prompt, BIOS, experiences, transcript.

Transformers applied here, in order: the latest compaction checkpoint (via
``Transcript.working``), orphaned tool calls dropped, exit signals kept out of the
continuation, ephemeral messages appended for this request only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..providers.base import ChatMessage, ChatRequest, ImagePart, ToolCallFinal, ToolSpec
from .collector import collector_paused
from .images import ImageRules, has_images, placeholder
from .mutations import Msg, MultimodalToolResult

DEFAULT_SYSTEM_PROMPT = (
    "You are Threadline, a concise and helpful assistant working inside the user's editor."
)

RESULT_SHARE = 0.5
"""The largest share of the context window one tool result may take in a request."""

CHARS_PER_TOKEN_FLOOR = 2
"""Characters per token assumed when cutting a result: a floor (prose runs ~4, code and
non-Latin text nearer 2), so a cut result fits whatever the tokenizer."""


def result_chars(context_window: int) -> int:
    """How many characters of one tool result a request carries for this window.

    A tool may return more than any context holds (a 20 MB ``tool/call`` answer); the
    history keeps it whole, the model gets the start of it and a note."""
    return max(1000, int(context_window * RESULT_SHARE * CHARS_PER_TOKEN_FLOOR))


def cut_result(text: str, limit: int | None) -> str:
    """The start of an over-large tool result, with a note the model can act on."""
    if limit is None or len(text) <= limit:
        return text
    return (
        text[:limit]
        + f"\n[cut: this result has {len(text)} characters; only the first {limit} fit in "
        "the model's context. The whole result is kept in the session history; ask for a "
        "smaller part (a line range, a narrower search) to see more.]"
    )


def render_block(block: dict[str, Any]) -> str:
    """Text the model sees for a content block it cannot take natively."""
    t = block.get("type")
    if t == "text":
        return str(block.get("text", ""))
    if t == "resource":
        res = block.get("resource", {})
        body = res.get("text")
        if body is None:
            return f"[binary resource {res.get('uri', '')}]"
        return f"[resource {res.get('uri', '')}]\n{body}"
    if t == "resource_link":
        return f"[file {block.get('name', '')}: {block.get('uri', '')}]"
    if t == "image":
        return placeholder(block, "not sent to the model")
    if t == "audio":
        return f"[{t} {block.get('mimeType', '')} omitted]"
    if t == "summary":
        return str(block.get("text", ""))
    return ""


def _text_of(blocks: Sequence[dict[str, Any]], types: tuple[str, ...]) -> str:
    return "".join(render_block(b) for b in blocks if b.get("type") in types)


def _user(content: Sequence[dict[str, Any]], images: ImageRules | None) -> ChatMessage:
    """A user message: its text, and its images as parts (or placeholders)."""
    texts: list[str] = []
    parts: list[ImagePart] = []
    for b in content:
        part = images.part(b) if images is not None and b.get("type") == "image" else None
        if isinstance(part, ImagePart):
            parts.append(part)
        elif part is not None:
            texts.append(part)
        elif s := render_block(b):
            texts.append(s)
    return ChatMessage("user", "\n\n".join(texts), images=parts)


def _summary(message: Msg) -> bool:
    content = message["content"]
    return message["role"] == "assistant" and bool(content) and content[0].get("type") == "summary"


def _result_images(
    block: dict[str, Any], images: ImageRules | None
) -> tuple[list[dict[str, Any]], list[ImagePart]]:
    """A tool result's content for the model, with the images it may take in it."""
    if images is None or not has_images(block.get("content", [])):
        return block.get("content", []), []
    content: list[dict[str, Any]] = []
    parts: list[ImagePart] = []
    for c in block.get("content", []):
        part = images.part(c) if c.get("type") == "image" else None
        if isinstance(part, ImagePart):
            parts.append(part)
        elif part is not None:
            content.append({"type": "text", "text": part})
        else:
            content.append(c)
    return content, parts


def request_tail(messages: Sequence[Msg]) -> Sequence[Msg]:
    """The messages from the latest user message (or compaction summary, which the
    model reads as one) on: all that tool selection reads of a request
    (`tools.selection.request_of`), so choosing tools costs the turn, not the history."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m["role"] == "user" or _summary(m):
            return messages[i:]
    return messages


def to_chat_messages(
    messages: Sequence[Msg],
    *,
    result_limit: int | None = None,
    images: ImageRules | None = None,
) -> list[ChatMessage]:
    """Provider-neutral messages; tool calls without a result are left out, and tool
    results longer than ``result_limit`` characters are cut (see :func:`cut_result`).

    ``images``: how this model takes images (without it every image is a placeholder,
    as for a compaction's summary). A model that takes them only in user messages gets
    each tool result that holds images `MultimodalToolResult.restructured`: the result
    says the image follows, and the images come in one user message after the batch's
    results (a chat completions request allows nothing between them)."""
    answered = {
        b["toolUseId"]
        for m in messages
        if m["role"] == "tool"
        for b in m["content"]
        if b.get("type") == "tool_result"
    }
    out: list[ChatMessage] = []
    follow: list[Msg] = []
    """User messages holding tool results' images, sent after the batch's results."""
    split = images is not None and images.support.sees and not images.support.in_tool_results
    rules = images
    if images is not None and any(_summary(m) for m in messages):
        rules = images.compacted()  # until the summary: what the compaction kept
    for m in messages:
        if _summary(m):
            rules = images
        if m["role"] != "tool" and follow:
            out += [_user(f["content"], images) for f in follow]
            follow = []
        content = m["content"]
        role = m["role"]
        if role == "tool" and split and rules is images and has_images(content):
            m, carried = MultimodalToolResult(m).restructured()
            content = m["content"]
            follow.append(carried)
        if role == "user":
            out.append(_user(content, rules))
        elif role == "assistant":
            if _summary(m):
                out.append(
                    ChatMessage(
                        "user",
                        "Summary of the conversation so far (earlier messages were compacted):\n"
                        + _text_of(content, ("summary",)),
                    )
                )
                continue
            calls = [
                ToolCallFinal(
                    b["id"], b["name"], b.get("input") or {}, json.dumps(b.get("input") or {})
                )
                for b in content
                if b.get("type") == "tool_use" and b["id"] in answered
            ]
            thoughts = [
                {k: v for k, v in b.items() if k != "type"}
                for b in content
                if b.get("type") == "thought"
            ]
            text = _text_of(content, ("text",))
            if text or calls or thoughts:
                out.append(ChatMessage("assistant", text, tool_calls=calls, thoughts=thoughts))
        elif role == "tool":
            for b in content:
                if b.get("type") != "tool_result":
                    continue
                shown, parts = _result_images(b, rules)
                out.append(
                    ChatMessage(
                        "tool",
                        cut_result("\n".join(render_block(c) for c in shown), result_limit),
                        tool_call_id=b["toolUseId"],
                        tool_name=b.get("toolName"),
                        is_error=bool(b.get("isError")),
                        images=parts,
                    )
                )
    out += [_user(f["content"], images) for f in follow]
    return out


def system_text(system_prompt: str | None, experiences: dict[str, str]) -> str:
    """The first message: what stays the same from call to call of a session."""
    parts = [system_prompt or DEFAULT_SYSTEM_PROMPT]
    if experiences:
        parts.append(
            "Things to remember (durable notes):\n"
            + "\n".join(f"- [{k}] {v}" for k, v in experiences.items())
        )
    return "\n\n".join(parts)


def with_tool_section(messages: list[ChatMessage], bios: str | None) -> list[ChatMessage]:
    """``messages`` with the tool section as a system message after them.

    Not in the first message: the section changes from call to call (the tools
    selected for this call, the calls left in the turn), and a model that keeps its
    evaluated prompt (llama.cpp's KV cache, a provider's prompt cache) reuses only the
    prefix up to the first changed token. After the history, the next call of the
    session (the next tool round, the next turn) evaluates only what was added since
    and the section again, however long the history."""
    return [*messages, ChatMessage("system", bios)] if bios else messages


def compile_request(
    *,
    system_prompt: str | None,
    experiences: dict[str, str],
    working: Sequence[Msg],
    tools: Sequence[ToolSpec] = (),
    bios: str | None = None,
    ephemeral: Sequence[ChatMessage] = (),
    max_tokens: int | None = None,
    temperature: float | None = None,
    context_window: int | None = None,
    images: ImageRules | None = None,
) -> ChatRequest:
    """``context_window``, when known, bounds each tool result (:func:`result_chars`);
    ``images``: how the model takes images (see :func:`to_chat_messages`). A few
    containers per message and no cycles: made with the collector paused."""
    messages = [ChatMessage("system", system_text(system_prompt, experiences))]
    limit = None if context_window is None else result_chars(context_window)
    with collector_paused():
        messages += to_chat_messages(working, result_limit=limit, images=images)
    messages = with_tool_section(messages, bios)
    messages += [
        ChatMessage(m.role, m.content, tool_call_id=m.tool_call_id, ephemeral=True)
        for m in ephemeral
    ]
    return ChatRequest(
        messages=messages,
        tools=list(tools),
        max_tokens=max_tokens,
        temperature=temperature,
        tool_choice="auto" if tools else "none",
    )
