"""The tool-call protocol, driven step by step with bounded ``max_tokens``.

It follows llama-cpp's ``chatml-function-calling`` handler: a grammar chooses
``message:`` or ``functions.<name>:``, then JSON arguments are constrained by a
grammar built from the tool's JSON schema; after a call, another grammar chooses the
next function or the end of the turn.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..base import ChatMessage, ChatRequest, FinishReason, ProviderEvent, ToolCallFinal, ToolSpec
from .chatml import IM_END
from .generation import Generator

TOOL_ARGS_MAX_TOKENS = 256
"""Bound on grammar-constrained argument generation (unbounded, one call ran 88 s)."""
MAX_TOOL_CALLS = 1
"""Calls per response. More are possible, but a 135M model mostly adds spurious ones."""


@dataclass(frozen=True, slots=True)
class ToolCallPolicy:
    """How far one response may go with tools."""

    args_max_tokens: int = TOOL_ARGS_MAX_TOKENS
    max_calls: int = MAX_TOOL_CALLS
    suppress_repeated: bool = True
    """Answer in text instead of repeating a call whose result is already in the history."""


def generate_with_tools(
    request: ChatRequest,
    gen: Generator,
    tokenize: Callable[[str], list[int]],
    prompt: list[int],
    *,
    policy: ToolCallPolicy,
    max_tokens: int,
    temperature: float,
    emit: Callable[[ProviderEvent], None],
    text_out: Callable[[str], None],
) -> FinishReason:
    """Choose between a message and calls, generate the calls' arguments, emit them."""
    from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

    tools = {t.name: t for t in request.tools}
    names = " | ".join(json.dumps(f"functions.{name}:") for name in tools)
    first = LlamaGrammar.from_string(
        f'root ::= functions | "message:"\nfunctions ::= {names}\n', verbose=False
    )
    # Under a grammar the model may spell a name one character per token.
    choice_tokens = max(len(f"functions.{n}:") for n in tools) + 4
    choice = gen.complete(prompt, max_tokens=choice_tokens, temperature=0.0, grammar=first)[0]
    name = _chosen_function(choice, tools)

    def message() -> FinishReason:
        cont = prompt + tokenize("message:\n")
        return gen.reply(cont, max_tokens=max_tokens, temperature=temperature, on_text=text_out)

    if name is None:
        return message()

    follow = LlamaGrammar.from_string(
        f'root ::= functions | "{IM_END}"\nfunctions ::= {names}\n', verbose=False
    )
    answered = _answered_calls(request.messages) if policy.suppress_repeated else set()
    seen: set[tuple[str, str]] = set()
    calls = 0
    cont = list(prompt)
    while name is not None and calls < policy.max_calls:
        tool = tools[name]
        cont += tokenize(f"functions.{name}:\n")
        try:
            grammar = LlamaGrammar.from_json_schema(json.dumps(tool.parameters), verbose=False)
        except Exception:
            grammar = LlamaGrammar.from_string(JSON_GBNF, verbose=False)
        raw, _ = gen.complete(
            cont,
            max_tokens=policy.args_max_tokens,
            temperature=temperature,
            grammar=grammar,
            repeat_penalty=1.0,
        )
        raw = raw.strip()
        arguments = _parse_arguments(raw)
        key = (name, _canonical(arguments) if arguments else raw)
        if key in answered:
            # A small model tends to repeat a call whose result it already has;
            # answer in text instead of looping.
            if calls == 0:
                return message()
            break
        if key in seen:
            break
        seen.add(key)
        calls += 1
        emit(
            ToolCallFinal(
                id=f"call_{uuid.uuid4().hex[:16]}",
                name=name,
                arguments=arguments,
                raw_arguments=raw,
            )
        )
        if calls >= policy.max_calls:
            break
        cont += tokenize(raw + "\n")
        more = gen.complete(
            cont, max_tokens=choice_tokens, temperature=0.0, grammar=follow, stop=[IM_END]
        )[0]
        name = _chosen_function(more, tools)
    return "tool_calls"


def _chosen_function(text: str, tools: dict[str, ToolSpec]) -> str | None:
    text = text.strip()
    if not text.startswith("functions."):
        return None
    name = text[len("functions.") :].rstrip(":").strip()
    return name if name in tools else None


def _canonical(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"))


def _answered_calls(messages: Sequence[ChatMessage]) -> set[tuple[str, str]]:
    """(name, canonical arguments) of earlier calls whose results are in the history."""
    results = {m.tool_call_id for m in messages if m.role == "tool"}
    return {
        (c.name, _canonical(c.arguments))
        for m in messages
        if m.role == "assistant"
        for c in m.tool_calls
        if c.id in results
    }


def _parse_arguments(raw: str) -> dict[str, Any]:
    """The JSON arguments as a dict; ``{}`` when truncated/invalid (raw is kept)."""
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
