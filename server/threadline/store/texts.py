"""What of a stored event the search index holds: the text of each message it creates.

A message's searchable text is what a person reads of it: its text blocks, a
compaction's summary, and the text a tool returned (``tool_result`` content). Thoughts,
tool arguments and binary content are left out. A very long text (a whole file a tool
read) is indexed up to `MAX_INDEXED` characters.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

MAX_INDEXED = 64 * 1024
"""Characters of one message's text the index holds; the rest is not searchable."""

PREVIEW_CHARS = 120
"""Characters of the first line of a session's first prompt kept as its preview."""


def _block_text(block: Any) -> Iterator[str]:
    if not isinstance(block, dict):
        return
    kind = block.get("type")
    if kind in ("text", "summary") and isinstance(block.get("text"), str):
        yield block["text"]
    elif kind == "tool_result":
        for inner in block.get("content") or ():
            yield from _block_text(inner)


def message_text(message: Any) -> str:
    """The searchable text of one stored message (``""`` when it has none)."""
    if not isinstance(message, dict):
        return ""
    text = "\n".join(t for b in message.get("content") or () for t in _block_text(b) if t)
    return text[:MAX_INDEXED]


def event_messages(kind: str, payload: Any) -> Iterator[tuple[str, str, str]]:
    """``(message id, role, text)`` of each message an event creates, in order."""
    if not isinstance(payload, dict):
        return
    if kind == "context_replace":
        messages = payload.get("messages") or []
    elif isinstance(payload.get("message"), dict):
        messages = [payload["message"]]
    else:
        return
    for m in messages:
        if isinstance(m, dict) and isinstance(m.get("messageId"), str):
            yield m["messageId"], str(m.get("role") or ""), message_text(m)


def preview(text: str) -> str | None:
    """The first non-empty line of a prompt, shortened: how a list shows a session."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"
    return None
