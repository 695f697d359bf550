"""One terminal conversation: the session it talks to, the sidecar's requests it
answers (permission, ``tool/call``, ``fs/*``), turns and Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from ..client import RpcError, ThreadlineClient
from .attachments import AttachmentError, prompt_blocks
from .input import SIGINT, LineInput, Sigint
from .questions import answer_form
from .rendering import TurnView, block_text, recap, says, short
from .tools import ChatTool

PERMISSION_CHOICES: list[tuple[str, str]] = [
    ("allow_once", "Allow once"),
    ("allow_always", "Always allow"),
    ("reject_once", "Reject"),
    ("reject_always", "Always reject"),
]


SESSION_BUSY = -32010
"""The session's turn runs in another window (or this one is still compacting)."""

PROMPT = "\u276f "  # a heavy angle quote marks the prompt
TURN_CONTENT = frozenset(
    ("agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan")
)
"""Updates that are a turn's own content (a steering line's turn shows its line first)."""


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _write_text(path: str, content: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(content)


def _offered(models: Any) -> list[dict[str, Any]]:
    """The models a person may pick: test models (``scripted:…``) are left out."""
    return [
        dict(m)
        for m in models or []
        if isinstance(m, dict) and not str(m.get("modelId", "")).startswith("scripted:")
    ]


class Chat:
    """One terminal conversation: the read-prompt-stream loop, commands and Ctrl-C."""

    def __init__(
        self,
        client: ThreadlineClient,
        console: Console,
        lines: LineInput,
        *,
        cwd: str,
        session_options: Mapping[str, Any],
        tools: Sequence[ChatTool],
    ) -> None:
        self.client = client
        self.console = console
        self.lines = lines
        self.cwd = cwd
        self.session_options = dict(session_options)
        self.tools = {t.name: t for t in tools}
        self.session_id = ""
        self.default_model = ""
        self.pending_model: str | None = None
        """The model the next session is created with (at its first prompt)."""
        self.model = ""
        self.models: list[dict[str, Any]] = []
        self.mode = str(self.session_options.get("mode") or "")
        """The session's mode (``ask``, ``plan``, ``code``, ``auto``); ``""`` until known."""
        self.modes: list[dict[str, Any]] = []
        self.last_rewind = ""
        """The ``rewindId`` of this session's last ``/rewind`` (``/unrewind`` undoes it)."""
        self.view: TurnView | None = None
        self.turn: asyncio.Task[Any] | None = None
        self.command: asyncio.Task[None] | None = None
        """The slash command running (a compaction…): Ctrl-C cancels it."""
        self.replaying = False
        """A ``session/load`` is replaying history: its updates are not a live turn."""
        self.watched: asyncio.Event | None = None
        """Set when the turn this chat watches (running in another process) ends."""
        self.interrupting = False
        self.last_was_sigint = False
        self.quit = asyncio.Event()
        self._read: asyncio.Future[str | Sigint | None] | None = None
        self._ask_lock = asyncio.Lock()
        self._background: set[asyncio.Task[Any]] = set()
        self.waiting: list[tuple[str, asyncio.Task[dict[str, Any]]]] = []
        """Lines typed while a turn ran, queued in the session: each runs as a turn next."""
        self.steering: list[tuple[str, asyncio.Task[dict[str, Any]]]] = []
        """``>`` lines typed while a turn ran: answered with the turn they joined, or, sent
        too late to join it, run as a turn of their own (shown like a queued line)."""
        self.heading: str | None = None
        """The line of a turn not known to be its own yet: printed with its first update."""
        self.view_turn: str | None = None
        """The turn whose content the view shows (its first content update's)."""
        self.early: list[tuple[str, dict[str, Any]]] = []
        self.deciding = False
        """Waiting for a steering line's answer: until it says whether the line joined
        the last turn, the content that arrives is the next turn's, and waits."""
        """Content of the next turn that came before this chat heard the last one end (it
        starts as soon as the sidecar ended that one): shown in the next turn's view."""

    # -- plumbing ----------------------------------------------------------------------

    async def ask(self, prompt: Text | str) -> str | Sigint | None:
        """Print a prompt and read one line; Ctrl-C abandons the read."""
        self.console.print(prompt, end="")
        self.console.file.flush()
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str | Sigint | None] = loop.create_future()
        self._read = answer
        reader = loop.create_task(self.lines.readline())

        def deliver(task: asyncio.Task[str | None]) -> None:
            if answer.done() or task.cancelled():
                return
            if task.exception() is not None:
                answer.set_result(None)
            else:
                answer.set_result(task.result())

        reader.add_done_callback(deliver)
        try:
            return await answer
        finally:
            self._read = None
            if not reader.done():
                reader.cancel()

    def on_sigint(self) -> None:
        if self._read is not None and not self._read.done():
            self.console.print()
            self._read.set_result(SIGINT)
            return
        if self.command is not None and not self.command.done():
            self.command.cancel()  # the client withdraws its request ($/cancelRequest)
            return
        if self.turn is not None and not self.turn.done():
            if self.interrupting:  # second Ctrl-C while the interrupt is under way: leave
                self.console.print(Text("\n[leaving]", style="yellow"))
                self.quit.set()
                self.turn.cancel()
                return
            self.interrupting = True
            self.last_was_sigint = True
            self._start_interrupt()

    def _start_interrupt(self) -> None:
        task = asyncio.get_running_loop().create_task(self._interrupt())
        self._background.add(task)  # the loop keeps only a weak reference
        task.add_done_callback(self._background.discard)

    async def _interrupt(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.interrupt(self.session_id)

    def on_update(self, session_id: str, update: dict[str, Any]) -> None:
        if session_id != self.session_id:
            return
        kind = update.get("sessionUpdate")
        tl = (update.get("_meta") or {}).get("threadline") or {}
        if kind == "session_info_update" and tl.get("watching") is not None:
            self.replaying = False  # the replay is over: the watched turn follows
            self._watching(bool(tl["watching"]))
            return
        if self.replaying:
            return
        if kind in TURN_CONTENT and self.view is not None and (self.deciding or tl.get("turnId")):
            if self.deciding:
                self.early.append((session_id, update))
                return
            if self.view_turn is None:
                self.view_turn = str(tl["turnId"])
            elif tl["turnId"] != self.view_turn:
                self.early.append((session_id, update))
                return
        if kind in TURN_CONTENT:
            self._show_heading()
        view = self.view
        if kind == "current_mode_update":
            mode = str(update.get("currentModeId") or "")
            if mode != self.mode and self.command is None:  # switched in another window
                self.console.print(Text(f"  mode {mode}", style="dim"), highlight=False)
            self.mode = mode
        elif kind == "config_option_update":  # model, tools: changed here or elsewhere
            self._take_config(update.get("configOptions"))
        elif kind == "usage_update" and view is not None:
            view.context = (int(update.get("used", 0)), int(update.get("size", 0)))
        elif kind == "compaction_update":
            status = update.get("status")
            if view is not None:
                view.status = "compacting…" if status == "in_progress" else "thinking…"
            if status == "completed":
                self.show_summary(block_text(update.get("summary")))
            elif status != "in_progress" or view is None:
                error = f": {update['error']}" if update.get("error") else ""
                self.console.print(Text(f"  ⋯ compaction {status}{error}", style="dim"))
        elif view is None:
            return
        elif kind == "agent_message_chunk" and tl.get("summary"):
            self.show_summary(block_text(update.get("content")))
        elif kind in ("agent_message_chunk", "agent_thought_chunk"):
            text = block_text(update.get("content"))
            view.chunk(
                "thought" if kind == "agent_thought_chunk" else "text",
                update.get("messageId"),
                text,
            )
        elif kind == "tool_call":
            view.tool_call(update)
        elif kind == "tool_call_update":
            view.tool_update(update)
        elif kind == "plan":
            view.plan(update.get("entries"))

    def show_summary(self, summary: str) -> None:
        """A compaction's summary, marked as one (live; `resume` marks stored ones)."""
        if self.view is not None:
            self.view.flush()
        self.console.print(
            Text("  ⋯ compacted: summary of the earlier conversation", style="dim"), highlight=False
        )
        if summary:
            self.console.print(Text(f"    {short(summary, 300)}", style="dim"), highlight=False)

    def _watching(self, watching: bool) -> None:
        """A turn of this session runs in another process and this chat now watches it
        (``session/load``), or that turn ended."""
        if watching:
            self.watched = asyncio.Event()
            if self.view is None:
                self.view = TurnView(self.console, self.cwd)
            return
        if self.watched is not None:
            self.watched.set()

    async def watch(self) -> None:
        """Show a turn that runs elsewhere until it ends; Ctrl-C interrupts it there."""
        ended = self.watched
        view = self.view
        if ended is None or view is None:
            return
        self.console.print(
            Text(
                "a turn of this session is running in another window: its answer follows "
                "(Ctrl-C interrupts it)",
                style="yellow",
            )
        )
        view.start()
        self.turn = asyncio.get_running_loop().create_task(ended.wait())
        self.interrupting = False
        self.lines.echo(False)
        try:
            await self.turn
        except asyncio.CancelledError:
            if not self.quit.is_set():
                raise
        finally:
            self.turn = None
            self.watched = None
            self.lines.echo(True, discard_typeahead=True)
            view.stop()
            self.view = None
        if self.interrupting:
            self.console.print(Text("[interrupted]", style="yellow"))
        self.console.print(Text("↳ the other window's turn ended", style="dim"))

    async def on_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self._asking(self._ask_permission, params)

    async def on_question(self, params: dict[str, Any]) -> dict[str, Any]:
        """``elicitation/create`` (the model's ``ask_user``): answered at the prompt."""
        return await self._asking(lambda p: answer_form(self.ask, self.console, p), params)

    async def _asking(
        self,
        answer: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
        params: dict[str, Any],
    ) -> dict[str, Any]:
        """One question to the user at a time, with the live answer paused and the
        typed keys shown meanwhile."""
        async with self._ask_lock:
            if self.view is not None:
                self.view.pause()
            self.lines.echo(True)
            try:
                return await answer(params)
            finally:
                if self.turn is not None and not self.turn.done():
                    self.lines.echo(False)
                if self.view is not None:
                    self.view.resume()

    async def _ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        call = params.get("toolCall") or {}
        options = params.get("options") or [
            {"optionId": o, "name": n, "kind": o} for o, n in PERMISSION_CHOICES
        ]
        title = call.get("title") or call.get("toolCallId") or "a tool"
        self.console.print(Text(f"\n  ? The model wants to run {title}", style="bold yellow"))
        if call.get("rawInput") and not says(str(title), call["rawInput"]):
            self.console.print(Text(f"    {short(call['rawInput'], 200)}", style="dim"))
        if self.view is not None:
            self.view.show_diffs(str(call.get("toolCallId", "")), call.get("content"))
        menu = "  ".join(
            f"[{i}] {o.get('name', o.get('optionId'))}" for i, o in enumerate(options, 1)
        )
        self.console.print(Text(f"    {menu}"))
        while True:
            answer = await self.ask(Text(f"    choose 1-{len(options)}: ", style="yellow"))
            if isinstance(answer, Sigint) or answer is None:
                self.on_sigint_during_permission()
                return {"outcome": {"outcome": "cancelled"}}
            choice = answer.strip()
            picked = [
                o
                for i, o in enumerate(options, 1)
                if choice in (str(i), o.get("optionId"), o.get("kind"))
            ]
            if picked:
                return {"outcome": {"outcome": "selected", "optionId": picked[0]["optionId"]}}

    def on_sigint_during_permission(self) -> None:
        """Ctrl-C at a permission question cancels the question and the turn (ACP)."""
        if self.turn is not None and not self.turn.done() and not self.interrupting:
            self.interrupting = True
            self.last_was_sigint = True
            self._start_interrupt()

    async def on_tool_call(self, params: dict[str, Any]) -> dict[str, Any]:
        tool = self.tools.get(str(params.get("name")))
        if tool is None:
            return {"content": [{"type": "text", "text": "unknown tool"}], "isError": True}
        return await tool.handler(dict(params.get("arguments") or {}))

    # -- sessions ----------------------------------------------------------------------

    async def open(self, session_id: str | None, model: str | None) -> None:
        init = await self.client.initialize(
            fs={"readTextFile": True, "writeTextFile": True}, elicitation={"form": {}}
        )
        meta = ((init.get("agentCapabilities") or {}).get("_meta") or {}).get("threadline") or {}
        self.models = _offered(meta.get("models"))
        self.default_model = str(meta.get("defaultModel") or "")
        if session_id:
            await self.resume(session_id)
            if model:
                await self.set_model(model)
        else:
            if model:
                await self.check_model(model)
            self.start_new(model)

    async def check_model(self, model: str) -> None:
        """Raise the sidecar's refusal of ``model`` (unknown, no API key) now, not at
        the first prompt: a session is opened with it and deleted again, since a new
        session is stored only when its first prompt is sent."""
        result = await self.client.request(
            "session/new",
            {"cwd": self.cwd, "mcpServers": [], "_meta": {"threadline": {"model": model}}},
        )
        await self.client.request("session/delete", {"sessionId": result["sessionId"]})

    def start_new(self, model: str | None) -> None:
        """A new session, created (and stored) when the first prompt is sent."""
        self.session_id = ""
        self.last_rewind = ""
        self.mode = str(self.session_options.get("mode") or "")
        self.pending_model = model
        self.model = model or self.default_model
        self.console.print(
            Text(f"new session · model {short(self.model, 48)}", style="dim"), highlight=False
        )

    async def ensure_session(self) -> str:
        if not self.session_id:
            await self.new_session(self.pending_model)
            self.pending_model = None
        return self.session_id

    async def new_session(self, model: str | None) -> None:
        meta = dict(self.session_options)
        if model:
            meta["model"] = model
        if self.tools:
            meta["tools"] = [*meta.get("tools", []), *(t.wire() for t in self.tools.values())]
        params: dict[str, Any] = {"cwd": self.cwd, "mcpServers": []}
        if meta:
            params["_meta"] = {"threadline": meta}
        result = await self.client.request("session/new", params)
        self.session_id = str(result["sessionId"])
        self._take_config(result.get("configOptions"))
        self.take_modes(result.get("modes"))
        self.console.print(
            Text(f"session {self.session_id}", style="dim"),
            highlight=False,
        )

    def take_modes(self, modes: Any) -> None:
        """ACP's ``modes`` of a session result: the current one and those offered."""
        if isinstance(modes, dict):
            self.mode = str(modes.get("currentModeId") or self.mode)
            self.modes = [m for m in modes.get("availableModes") or [] if isinstance(m, dict)]

    def _take_config(self, options: Any) -> None:
        """The session's options as the server says they are now (``/model`` and
        ``/tools`` show them); the mode has its own ``current_mode_update``."""
        for opt in options or []:
            if isinstance(opt, dict) and opt.get("id") == "builtinTools":
                self.session_options["builtinTools"] = opt.get("currentValue") != "off"
            if isinstance(opt, dict) and opt.get("id") == "model":
                self.model = str(opt.get("currentValue", self.model))
                self.models = (
                    _offered(
                        {"modelId": o.get("value"), "name": o.get("name")}
                        for o in opt.get("options") or []
                    )
                    or self.models
                )

    async def resume(self, session_id: str) -> None:
        """Switch to a stored session: its last messages (labelled for ``/fork``), and,
        when a turn of it runs in another window, that turn as it goes (``watch``)."""
        history = await self.client.history(session_id)
        self.session_id, self.replaying = session_id, True
        try:
            loaded = await self.client.request(
                "session/load", {"sessionId": session_id, "cwd": self.cwd}
            )
        except BaseException:
            self.session_id = ""
            raise
        finally:
            self.replaying = False
        self.last_rewind = ""
        self.take_modes((loaded or {}).get("modes"))
        for s in await self.client.list_sessions():
            if s.get("sessionId") == session_id:
                self.model = str((s.get("_meta") or {}).get("model") or "")
        self.console.print(
            Text(f"resumed {session_id} · model {short(self.model, 48)}", style="dim"),
            highlight=False,
        )
        for m in history[-4:]:
            line = recap(m)
            if line is not None:
                self.console.print(Text(f"  [{line[0]}] {line[1]}: ", style="dim"), end="")
                self.console.print(Text(short(line[2], 200)), highlight=False)
        if history:
            self.console.print(Text("  (/fork LABEL branches after that message)", style="dim"))
        await self.watch()

    async def set_model(self, model: str) -> None:
        if not self.session_id:
            await self.check_model(model)
            self.pending_model = self.model = model
            self.console.print(Text(f"model {self.model}", style="dim"), highlight=False)
            return
        result = await self.client.request(
            "session/set_config_option",
            {"sessionId": self.session_id, "configId": "model", "value": model},
        )
        self._take_config((result or {}).get("configOptions"))
        self.console.print(Text(f"model {self.model}", style="dim"), highlight=False)

    @property
    def builtin_tools(self) -> bool:
        return self.session_options.get("builtinTools", True) is not False

    async def on_read_file(self, params: dict[str, Any]) -> dict[str, Any]:
        """``fs/read_text_file``: the file on disk (``line`` is 1-based)."""
        text = await asyncio.to_thread(_read_text, str(params["path"]))
        lines = text.split("\n")
        first = max(1, int(params.get("line") or 1))
        limit = params.get("limit")
        last = len(lines) if limit is None else min(len(lines), first + int(limit) - 1)
        return {"content": "\n".join(lines[first - 1 : last])}

    async def on_write_file(self, params: dict[str, Any]) -> dict[str, Any]:
        """``fs/write_text_file``: the sidecar asked permission (in this terminal) first."""
        path, content = str(params["path"]), str(params["content"])
        await asyncio.to_thread(_write_text, path, content)
        return {}

    # -- turns -------------------------------------------------------------------------

    async def run_turn(self, text: str) -> None:
        try:
            content = prompt_blocks(text, Path(self.cwd))  # `@image path` attaches a file
            await self.ensure_session()
        except (RpcError, AttachmentError) as exc:
            self.console.print(Text(f"error: {exc.message}", style="red"))
            return
        request = self.client.prompt(self.session_id, text, content=content)
        await self.follow_turns(asyncio.get_running_loop().create_task(request))

    async def follow_turns(self, request: asyncio.Task[dict[str, Any]]) -> None:
        """Show a turn, then what was typed while it ran: steering too late to join it
        first (the server runs that before the queue), then the queued lines."""
        last = await self._turn(request)
        while not self.quit.is_set():
            if self.steering:
                text, steer = self.steering.pop(0)
                last = await self._turn(steer, joined=last, heading=text) or last
            elif self.waiting:
                text, queued = self.waiting.pop(0)
                self.console.print(Text(PROMPT + text, style="bold magenta"), highlight=False)
                last = await self._turn(queued) or last
            else:
                return

    async def _type_ahead(self) -> None:
        """Lines typed while a turn runs: Enter queues the line in the session (it runs
        as the next turn); a line that starts with ``>`` steers the running turn."""
        while (line := await self.lines.readline()) is not None:
            line = line.strip()
            if not line:
                continue
            mode = "steer" if line.startswith(">") else "queue"
            text = line[1:].strip() if mode == "steer" else line
            task = asyncio.get_running_loop().create_task(
                self.client.prompt(self.session_id, text, while_running=mode)
            )
            if mode == "queue":
                self.waiting.append((text, task))
                self.console.print(Text(f"  ⧗ queued: {text}", style="cyan"), highlight=False)
                continue
            self.steering.append((text, task))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
            self.console.print(Text(f"  ↪ steering: {text}", style="cyan"), highlight=False)

    async def _turn(
        self,
        request: asyncio.Task[dict[str, Any]],
        *,
        joined: str | None = None,
        heading: str | None = None,
    ) -> str | None:
        """Show one turn (this chat's prompt, or one it queued) until it ends; its turn
        id. A steering line (``heading``) answered with the turn it joined (``joined``)
        shows nothing more; one that ran on its own is shown as a turn, headed by it."""
        self.heading = heading
        self.deciding = joined is not None
        self.view = TurnView(self.console, self.cwd)
        self.view_turn = None
        self.interrupting = False
        self.view.start()
        early, self.early = self.early, []
        for session_id, update in early:
            self.on_update(session_id, update)
        self.turn = request
        self.lines.echo(False)
        typing = asyncio.get_running_loop().create_task(self._type_ahead())
        try:
            result = await self.turn
        except asyncio.CancelledError:
            if not self.quit.is_set():
                raise
            self.view.stop()
            return None
        except (RpcError, ConnectionError) as exc:
            self.view.stop()
            self.heading = None
            if isinstance(exc, RpcError):
                self.console.print(Text(f"error: {exc.message}", style="red"))
                reason = (exc.data or {}).get("reason") if isinstance(exc.data, dict) else None
                if reason:
                    self.console.print(Text(f"  reason: {reason}", style="red"))
                if exc.code == SESSION_BUSY:
                    self.console.print(Text("  /interrupt stops it from here", style="dim"))
            else:
                self.console.print(Text(f"error: {exc}", style="red"))
            return None
        finally:
            typing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await typing
            self.turn = None
            self.deciding = False
            self.lines.echo(True, discard_typeahead=True)
        if ((result.get("_meta") or {}).get("threadline") or {}).get("queue"):
            self.view.stop()
            self.view = None
            self.heading = None
            self.console.print(Text("  ⧗ held in the queue (/queue run)", style="yellow"))
            return None
        label = ((result.get("_meta") or {}).get("threadline") or {}).get("turnId")
        if joined is not None:
            if label == joined:  # it joined the turn shown: nothing more to show
                self.view.stop()
                self.view = None
                self.heading = None
                return label
            self._show_heading()
            early, self.early = self.early, []
            for session_id, update in early:  # this turn's content, held until now
                self.on_update(session_id, update)
        view = self.view
        view.stop()
        self.view = None
        stop = str(result.get("stopReason", ""))
        if stop == "cancelled":
            self.console.print(Text("[interrupted]", style="yellow"))
        else:
            self.last_was_sigint = False
        self._show_heading()
        self.console.print(view.usage_line(stop, result.get("usage"), label, self.mode))
        return label

    def _show_heading(self) -> None:
        """A steering line that runs as a turn of its own, said once, before its turn."""
        if self.heading is None:
            return
        text, self.heading = self.heading, None
        if self.view is not None:
            self.view.flush()
        self.console.print(Text(PROMPT + text, style="bold magenta"), highlight=False)
        self.console.print(Text("  ↪ too late to join the turn: runs as its own", style="dim"))

    async def run_command(self, work: Awaitable[None]) -> None:
        """A slash command, which Ctrl-C cancels (its request is withdrawn)."""

        async def run() -> None:
            await work

        self.command = asyncio.get_running_loop().create_task(run())
        try:
            await self.command
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
        finally:
            self.command = None

    async def loop(self, command: Callable[[str], Awaitable[None]]) -> int:
        """Read and run lines until the person leaves; ``command`` runs a slash command."""
        while not self.quit.is_set():
            line = await self.ask(Text(PROMPT, style="bold magenta"))
            if line is None:  # Ctrl-D
                self.console.print()
                return 0
            if isinstance(line, Sigint):
                if self.last_was_sigint:
                    return 0
                self.last_was_sigint = True
                self.console.print(Text("(Ctrl-C again or Ctrl-D to exit)", style="dim"))
                continue
            self.last_was_sigint = False
            line = line.strip()
            if not line:
                continue
            if line.startswith("/") and not line.startswith("//"):
                await self.run_command(command(line))
            else:
                await self.run_turn(line[1:] if line.startswith("//") else line)
            if self.client.closed.is_set():
                self.console.print(Text("the sidecar exited", style="red"))
                return 1
        return 0
