"""Fallback tool-call parsing for models that write calls as JSON in their text.

The system prompt's convention is one JSON object ``{"tool": name, "arguments": {...}}``
(optionally inside a fenced code block). Only a clearly delimited, complete object is
taken; it is stripped from the visible answer.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..providers.base import ToolCallFinal

_FENCE = re.compile(r"```(?:json|tool)?\s*(\{.*?\})\s*```", re.DOTALL)


def _objects(text: str) -> list[tuple[int, int, str]]:
    """Spans of balanced top-level ``{...}`` in text (strings respected)."""
    spans: list[tuple[int, int, str]] = []
    depth = 0
    start = -1
    in_str = False
    esc = False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth > 0:
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1, text[start : i + 1]))
    return spans


def _as_call(obj: Any) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(obj, dict):
        return None
    has_args = "arguments" in obj or "parameters" in obj
    name = obj.get("tool", obj.get("name") if has_args else None)
    args = obj.get("arguments", obj.get("parameters", {}))
    if not isinstance(name, str) or not name:
        return None
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return None
    if not isinstance(args, dict):
        return None
    return name, args


def parse_fallback_call(text: str) -> tuple[ToolCallFinal, str] | None:
    """The first tool call written in ``text`` and the text without it, or None."""
    candidates: list[tuple[int, int, str]] = [
        (m.start(), m.end(), m.group(1)) for m in _FENCE.finditer(text)
    ] or _objects(text)
    for start, end, raw in candidates:
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            continue
        parsed = _as_call(obj)
        if parsed is None:
            continue
        name, args = parsed
        call = ToolCallFinal(
            id=f"call_{os.urandom(6).hex()}", name=name, arguments=args, raw_arguments=raw
        )
        remaining = (text[:start] + text[end:]).strip()
        return call, remaining
    return None
