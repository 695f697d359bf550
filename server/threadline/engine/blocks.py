"""The content blocks the engine stores for what clients are shown.

Whatever a client is shown must be stored, so that ``session/load`` can show it again
(`rpc/projection.py` makes both from the same blocks): a ``tool_use`` block records
the ``title``, ``kind`` and ``locations`` its tool gave when the call was made, a
text block the text as it streamed when a call was taken out of it, a ``summary``
its ``compactionId``.
"""

from __future__ import annotations

from typing import Any

Block = dict[str, Any]


def text_block(text: str, *, streamed: str) -> Block:
    """An answer's text without the tool call the model wrote in it, remembering the
    text as it streamed (what clients were shown) in ``_meta.threadline.streamed``."""
    return {"type": "text", "text": text, "_meta": {"threadline": {"streamed": streamed}}}


def shown_text(block: Block) -> str:
    """The text clients were shown for a stored text block."""
    meta = block.get("_meta")
    if isinstance(meta, dict):
        tl = meta.get("threadline")
        if isinstance(tl, dict) and isinstance(tl.get("streamed"), str):
            return tl["streamed"]
    return str(block.get("text", ""))


def call_block(
    call_id: str,
    name: str,
    arguments: dict[str, Any],
    *,
    title: str,
    kind: str,
    locations: list[dict[str, Any]],
    content: list[dict[str, Any]] | None = None,
) -> Block:
    """A ``tool_use`` block with what the client is shown of it; ``content``: what the
    call would do (an edit's diff), shown from its first ``tool_call`` on."""
    block: Block = {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": arguments,
        "title": title,
        "kind": kind,
        "locations": locations,
    }
    if content:
        block["content"] = content
    return block


def summary_block(text: str, compaction_id: str) -> Block:
    return {"type": "summary", "text": text, "compactionId": compaction_id}
