"""Tool choice of the embedded model: every tool offered vs the tools selected per call.

In one run, each prompt of :data:`bench.toolprompts.TOOL_PROMPTS` (each needs one
specific tool) goes to the embedded SmolLM2-135M model twice: once offered every
tool of an editor session (the default workspace and memory tools plus five editor
tools), once offered what :class:`threadline.tools.selection.ToolSelector` selects.
Both requests are compiled by the engine's own code (system prompt, tool section,
the tools), greedy, in process with the sidecar's model settings. Reported: the rate
of right first calls and the prompt tokens (the model's own tokenizer). The plain
questions of :data:`bench.toolprompts.PLAIN_QUESTIONS` (no tool needed) go the same
two ways; reported: how many answers contain a word a sensible answer contains.
"""

from __future__ import annotations

from typing import Any

import anyio

from threadline.engine.compiler import compile_request
from threadline.engine.memory import SessionMemory
from threadline.engine.mutations import Msg
from threadline.engine.session import bios
from threadline.providers.base import (
    SMALL_MODEL_TOOLS,
    ChatMessage,
    ChatRequest,
    TextDelta,
    ToolCallFinal,
    ToolSpec,
)
from threadline.providers.local import LocalModel, LocalProvider
from threadline.tools.ask import AskUser
from threadline.tools.base import Tool, ToolContext, ToolOutcome
from threadline.tools.delegate import Delegate, DelegateRequest
from threadline.tools.factory import build_registry
from threadline.tools.memory import ForgetTool, RememberTool
from threadline.tools.registry import ToolRegistry
from threadline.tools.selection import ToolSelector

from ..context import Context
from ..report import Row, verdict
from ..stats import summarize
from ..toolprompts import EDITOR_TOOLS, PLAIN_QUESTIONS, TOOL_PROMPTS

FIGURE = "tool choice (embedded model)"


class _NoChildren:
    """Never asked: the figure reads the model's first call, it runs none."""

    async def delegate(self, request: DelegateRequest, ctx: ToolContext) -> ToolOutcome:
        raise AssertionError("the tool-choice figure runs no call")

    def may_delegate(self, depth: int) -> bool:
        return True


def registry() -> ToolRegistry:
    """The tools of an editor session that can write files, as ``Session`` builds them."""
    none = SessionMemory(lambda _: None, dict)
    server_side: list[Tool] = [
        RememberTool(none),
        ForgetTool(none),
        AskUser(),
        Delegate(_NoChildren()),
    ]
    return build_registry(
        tools=EDITOR_TOOLS,
        client_capabilities={"fs": {"readTextFile": True, "writeTextFile": True}},
        extra_tools=server_side,
    )


def request(
    prompt: str, tools: list[ToolSpec], exits: frozenset[str], max_tokens: int = 32
) -> ChatRequest:
    working: list[Msg] = [
        {
            "messageId": "m1",
            "turnId": "u1",
            "role": "user",
            "content": [{"type": "text", "text": prompt}],
            "createdAt": "",
        }
    ]
    return compile_request(
        system_prompt=None,
        experiences={},
        working=working,
        tools=tools,
        bios=bios(tools, exits, 25),
        max_tokens=max_tokens,
        temperature=0.0,
    )


async def first_call(provider: LocalProvider, req: ChatRequest) -> str | None:
    async for event in provider.stream(req):
        if isinstance(event, ToolCallFinal):
            return event.name
    return None


async def answer(provider: LocalProvider, req: ChatRequest) -> str:
    """The text answer, or "" when the model called a tool instead."""
    parts: list[str] = []
    async for event in provider.stream(req):
        if isinstance(event, ToolCallFinal):
            return ""
        if isinstance(event, TextDelta):
            parts.append(event.text)
    return "".join(parts)


async def measure(
    prompts: list[tuple[str, str]], questions: list[tuple[str, tuple[str, ...]]]
) -> dict[str, list[dict[str, Any]]]:
    reg = registry()
    selector = ToolSelector(reg)
    provider = LocalProvider(LocalModel())
    await provider.model.load()
    out: dict[str, list[dict[str, Any]]] = {
        "all": [],
        "selected": [],
        "plain all": [],
        "plain selected": [],
    }
    try:
        for question, words in questions:
            for mode in ("all", "selected"):
                tools = (
                    reg.specs()
                    if mode == "all"
                    else selector.offer([ChatMessage("user", question)], SMALL_MODEL_TOOLS).specs
                )
                text = await answer(provider, request(question, tools, reg.exit_names, 40))
                out[f"plain {mode}"].append({"right": any(w in text.lower() for w in words)})
        for prompt, expected in prompts:
            offers = {
                "all": reg.specs(),
                "selected": selector.offer([ChatMessage("user", prompt)], SMALL_MODEL_TOOLS).specs,
            }
            for mode, tools in offers.items():
                req = request(prompt, tools, reg.exit_names)
                called = await first_call(provider, req)
                out[mode].append(
                    {
                        "right": called == expected,
                        "tokens": provider.count_tokens(req),
                        "tools": len(tools),
                    }
                )
    finally:
        await provider.aclose()
        await provider.model.aclose()
    return out


def run(ctx: Context) -> list[Row]:
    prompts = TOOL_PROMPTS[: ctx.n(len(TOOL_PROMPTS), 3)]
    questions = PLAIN_QUESTIONS[: ctx.n(len(PLAIN_QUESTIONS), 3)]
    results = anyio.run(measure, prompts, questions)
    rows: list[Row] = []
    plain = {m: sum(r["right"] for r in results[f"plain {m}"]) for m in ("all", "selected")}
    n = len(questions)
    rows.append(
        Row(
            FIGURE,
            "plain questions (no tool needed), tools selected per call",
            f"{plain['selected']}/{n} sensible answers",
            "",
            f"every tool offered: {plain['all']}/{n}",
            "≥ every tool offered",
            verdict(plain["selected"] >= plain["all"]),
        )
    )
    all_tokens = summarize(r["tokens"] for r in results["all"]).p50
    for mode, label in (("all", "every tool offered"), ("selected", "tools selected per call")):
        rs = results[mode]
        right = sum(r["right"] for r in rs)
        tokens = summarize(r["tokens"] for r in rs)
        tools = summarize(r["tools"] for r in rs)
        rows.append(
            Row(
                FIGURE,
                f"{label} ({tools.p50:.0f} tools, median)",
                f"{right}/{len(rs)} right first calls ({right / len(rs):.0%})",
                f"prompt tokens {tokens.min:.0f}–{tokens.max:.0f}",
                f"prompt tokens median {tokens.p50:.0f}"
                + ("" if mode == "all" else f" ({tokens.p50 / all_tokens:.0%} of all tools)"),
                "≥ 80 % right" if mode == "selected" else "",
                # A smoke run's three prompts cannot tell 80 % from 67 %.
                verdict(None if ctx.quick else right / len(rs) >= 0.8)
                if mode == "selected"
                else "",
            )
        )
    return rows
