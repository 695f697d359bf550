"""A fake `TurnHost`: the turn loop and the compactor run against it in-process.

It keeps what a session would keep (the transcript, through real mutations) and
records everything else the loop does to it: commits, announced events, the stream
journal, permission requests, so tests assert on exactly what the loop asked for.
The events are also shown as a client that shows compactions would see them
(`rpc/projection.py`), so tests read the very updates a client gets.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from threadline.engine.compiler import compile_request
from threadline.engine.config import SessionConfig
from threadline.engine.cost import session_cost
from threadline.engine.events import Event
from threadline.engine.mutations import Msg, Mutation
from threadline.engine.tasks import RunningTask, SessionTask
from threadline.engine.transcript import Transcript
from threadline.engine.turn import Turn
from threadline.providers.base import ChatMessage, ChatRequest, Provider, ToolCallFinal
from threadline.providers.scripted import ScriptedProvider
from threadline.rpc.projection import Projection
from threadline.tools.base import Tool, ToolContext, ToolKind, ToolOutcome
from threadline.tools.modes import Decision
from threadline.tools.registry import ToolRegistry
from threadline.userconfig import Price


class NoClient:
    """A client that answers nothing (the fake host asks permission itself)."""

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        raise RuntimeError(f"no client to answer {method}")

    def client_capabilities(self) -> dict[str, Any]:
        return {}


@dataclass
class Journal:
    began: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    runs: list[tuple[str, str]] = field(default_factory=list)
    cleared: int = 0

    def begin(self, message_id: str, meta: dict[str, Any]) -> None:
        self.began.append((message_id, meta))

    async def append(self, runs: Sequence[tuple[str, str]]) -> None:
        self.runs.extend(runs)

    def clear(self) -> None:
        self.cleared += 1


class FakeHost:
    def __init__(
        self,
        provider: Provider,
        *,
        tools: Sequence[Tool] = (),
        allow: bool = True,
        compaction_limit: int | None = None,
        config: SessionConfig | None = None,
        prices: dict[str, Price] | None = None,
    ) -> None:
        self.id = "sess_fake"
        self.prices = prices or {}
        """What the host's models cost (threadline.toml's ``price``); none by default."""
        self.transcript = Transcript()
        self.config = config or SessionConfig(model="scripted:test", auto_compact=False)
        self.journal = Journal()
        self.tools = ToolRegistry(tools)
        self._provider = provider
        self.allow = allow
        self.limit = compaction_limit
        self.commits: list[tuple[list[Mutation], bool]] = []
        self.events: list[Event] = []
        self.projection = Projection(shows_compaction=True)
        self.asked: list[tuple[str, str]] = []
        self.titled: list[list[dict[str, Any]]] = []
        self.steering: list[tuple[str, list[dict[str, Any]]]] = []
        """Prompts sent to steer the turn, taken at its next look (`take_steering`)."""
        self.looks = 0
        """How many times the turn looked for steering input."""
        self.shown_prompts: list[dict[str, Any]] = []
        self.checkpoints: list[str] = []
        """The moments the turn checkpointed the workspace at, in order."""

    @property
    def committed(self) -> list[Mutation]:
        return [m for batch, _ in self.commits for m in batch]

    def kinds(self) -> list[str]:
        return [m.kind for m in self.committed]

    @property
    def updates(self) -> list[dict[str, Any]]:
        return [u for e in self.events for u in self.projection.updates(e)]

    def updates_of(self, kind: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u["sessionUpdate"] == kind]

    # -- TurnHost ---------------------------------------------------------------------

    async def provider(self) -> Provider:
        return self._provider

    def price(self, model: str) -> Price | None:
        return self.prices.get(model)

    def cost(self, pending: tuple[str, int, int]) -> float | None:
        return session_cost(self.transcript.messages, self.price, pending)

    def compile_request(
        self,
        *,
        budget: int,
        tools_off: bool = False,
        ephemeral: Sequence[ChatMessage] = (),
        context_window: int | None = None,
        working: Sequence[Msg] | None = None,
    ) -> ChatRequest:
        return compile_request(
            system_prompt=self.config.system_prompt,
            experiences=self.transcript.experiences,
            working=self.transcript.working() if working is None else working,
            tools=[] if tools_off else self.tools.specs(),
            ephemeral=ephemeral,
            context_window=context_window,
        )

    def compaction_limit(self, provider: Provider) -> int | None:
        return self.limit

    def commit(self, mutations: Sequence[Mutation], *, end_stream: bool = False) -> None:
        self.commits.append((list(mutations), end_stream))
        for m in mutations:
            self.transcript.apply(m)

    def announce(self, event: Event) -> None:
        self.events.append(event)

    def tool_context(self, call_id: str, *, confined: bool = False) -> ToolContext:
        return ToolContext(self.id, call_id, "/nowhere", (), NoClient(), confined=confined)

    async def authorize(
        self, tool: Tool, call: ToolCallFinal, shown: Sequence[dict[str, Any]] = ()
    ) -> Decision:
        if not tool.needs_permission:
            return Decision("run")
        self.asked.append((tool.name, call.id))
        if self.allow:
            return Decision("run")
        return Decision("refuse", "The user refused permission for this tool call.")

    def maybe_title(self, prompt: list[dict[str, Any]]) -> None:
        self.titled.append(prompt)

    def take_steering(self, turn_id: str) -> list[tuple[str, list[dict[str, Any]]]]:
        self.looks += 1
        taken, self.steering = self.steering, []
        return taken

    def show_prompt(self, message: dict[str, Any]) -> None:
        self.shown_prompts.append(message)

    async def checkpoint(self, moment: str) -> None:
        self.checkpoints.append(moment)


class EchoTool:
    """Answers ``echo: <text>`` and remembers each run's context."""

    name = "echo"
    description = "Repeat the text back."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }
    kind: ToolKind = "other"
    parallelizable = True
    timeout = 5.0

    def __init__(self, *, needs_permission: bool = False) -> None:
        self.needs_permission = needs_permission
        self.runs: list[tuple[dict[str, Any], ToolContext]] = []

    def title(self, arguments: dict[str, Any]) -> str:
        return f"Echo {arguments.get('text', '')}"

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return [{"path": f"{ctx.cwd}/echo.txt"}]

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        self.runs.append((arguments, ctx))
        return ToolOutcome.text(f"echo: {arguments['text']}")


def scripted(
    *rounds: list[dict[str, Any]],
    summary: list[dict[str, Any]] | None = None,
    steered: bool = False,
) -> ScriptedProvider:
    script: dict[str, Any] = {"rounds": list(rounds), "steered": steered}
    if summary is not None:
        script["summary"] = summary
    return ScriptedProvider(json.dumps(script))


def text_prompt(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def turn(host: FakeHost, text: str = "hi") -> Turn:
    return Turn(host, text_prompt(text))


async def started(task: SessionTask[Any], until: anyio.Event) -> tuple[RunningTask[Any], list[Any]]:
    """Run ``task`` until ``until`` is set, then stop it the one way tasks are stopped;
    its result is returned with it."""
    running = RunningTask(task)
    results: list[Any] = []

    async def run() -> None:
        results.append(await running.run())

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(5):
            await until.wait()
        assert running.cancel()
    assert running.done.is_set()
    return running, results


def when(host: FakeHost, seen: Callable[[Event], bool]) -> anyio.Event:
    """Set once the host has been told an event that ``seen`` picks."""
    told = anyio.Event()
    announce = host.announce

    def watched(event: Event) -> None:
        announce(event)
        if seen(event):
            told.set()

    host.announce = watched  # type: ignore[method-assign]
    return told


def echo_session(engine: Any, cwd: str) -> str:
    """A new session on the scripted echo model, made through the engine (an
    ``engine.engine.Engine``) as ``session/new`` makes it; its id."""
    from threadline_protocol import methods as pm

    created = engine.new_session(
        pm.NewSessionParams.model_validate(
            {"cwd": cwd, "mcpServers": [], "_meta": {"threadline": {"model": "scripted:echo"}}}
        )
    )
    assert isinstance(created, pm.NewSessionResult)
    return created.session_id
