"""A question the model puts to the user (ACP ``elicitation/create``, sent by the
``ask_user`` tool), answered at the chat's prompt one field at a time.

Each property of the requested form is read by its type: a numbered menu for an
``enum`` (its number or its value), ``y``/``n`` for a boolean, a number for
``number``/``integer`` (asked again until it is one), a line for text. An empty line
declines the question (ACP's ``decline``); Ctrl-C or the end of input dismisses it
(``cancel``); every field answered accepts it with the values (``accept``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from .input import Sigint

Ask = Callable[[Text], Awaitable["str | Sigint | None"]]


class _Stop(Exception):
    """The user declined (an empty line) or dismissed (Ctrl-C, end of input)."""

    def __init__(self, action: str) -> None:
        super().__init__(action)
        self.action = action


async def answer_form(ask: Ask, console: Console, params: dict[str, Any]) -> dict[str, Any]:
    """The ``elicitation/create`` answer the user gives at the prompt."""
    console.print(Text(f"\n  ? {params.get('message') or 'The model asks:'}", style="bold yellow"))
    schema = params.get("requestedSchema") or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    console.print(Text("    (an empty line declines, Ctrl-C dismisses)", style="dim"))
    content: dict[str, Any] = {}
    try:
        for name, raw in properties.items():
            prop: dict[str, Any] = raw if isinstance(raw, dict) else {}
            label = "answer" if len(properties) == 1 else str(prop.get("title") or name)
            content[name] = await _field(ask, console, label, prop)
    except _Stop as stop:
        return {"action": stop.action}
    return {"action": "accept", "content": content}


async def _line(ask: Ask, prompt: str) -> str:
    answer = await ask(Text(prompt, style="yellow"))
    if isinstance(answer, Sigint) or answer is None:
        raise _Stop("cancel")
    if not answer.strip():
        raise _Stop("decline")
    return answer.strip()


async def _field(ask: Ask, console: Console, label: str, prop: dict[str, Any]) -> Any:
    if prop.get("description"):
        console.print(Text(f"    {prop['description']}", style="dim"))
    choices = prop.get("enum")
    if isinstance(choices, list) and choices:
        values = [str(c) for c in choices]
        console.print(Text("    " + "  ".join(f"[{i}] {c}" for i, c in enumerate(values, 1))))
        while True:
            said = await _line(ask, f"    {label}, choose 1-{len(values)}: ")
            picked = [c for i, c in enumerate(values, 1) if said in (str(i), c)]
            if picked:
                return picked[0]
    kind = prop.get("type")
    if kind == "boolean":
        while True:
            said = (await _line(ask, f"    {label} (y/n): ")).lower()
            if said in ("y", "yes", "n", "no"):
                return said.startswith("y")
    if kind in ("number", "integer"):
        while True:
            said = await _line(ask, f"    {label} ({kind}): ")
            try:
                return int(said) if kind == "integer" else float(said)
            except ValueError:
                continue
    return await _line(ask, f"    {label}: ")
