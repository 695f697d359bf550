"""``threadline chat``: an interactive terminal chat with a Threadline sidecar.

The answer streams as markdown (a rich ``Live`` area that shows the tail of what is
arriving, then prints the finished piece into the scrollback). Ctrl-C during a turn
sends ``session/interrupt``; the turn ends with ``cancelled`` and the partial answer
stays in the session. Ctrl-C at the prompt right after that (or twice in a row) exits,
as does Ctrl-D. Tool calls show while they run, permission requests are asked in the
terminal, and each turn ends with a token-usage line.

Slash commands (see ``/help``): ``/fork [messageId]``, ``/compact [instructions]``,
``/sessions``, ``/resume ID``, ``/model [id]``, ``/new``, ``/delete [ID]``, ``/tools``,
``/quit``. The chat reads and writes files for the sidecar (``fs/*``), so the built-in
``write_file`` tool is offered, and asks before each write.

A new session is stored when its first prompt is sent: starting the chat and leaving
leaves nothing behind.

Input is read from the terminal in its ordinary (canonical) mode through the event
loop, not from a thread: the kernel does line editing, a pending read can be abandoned
on Ctrl-C, and nothing is left blocking when the chat exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import termios
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from .client import RpcError, ThreadlineClient

SERVE_IGNORING_SIGINT = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "sys.argv = ['threadline', 'serve']; runpy.run_module('threadline', run_name='__main__')"
)
"""The sidecar shares the terminal's process group, so the terminal's Ctrl-C would
reach it too and kill it mid-turn; it ignores SIGINT and the chat interrupts the turn
over the protocol instead."""

PERMISSION_CHOICES: list[tuple[str, str]] = [
    ("allow_once", "Allow once"),
    ("allow_always", "Always allow"),
    ("reject_once", "Reject"),
    ("reject_always", "Always reject"),
]

HELP = """\
/fork [messageId]        branch this session (at a message, default: all of it) and switch to it
/compact [instructions]  summarise older history to free context
/sessions                list stored sessions
/resume ID               switch to a stored session
/model [id]              show the models, or switch this session's model
/new [model]             start a new session (stored at its first prompt)
/delete [ID]             delete this session (or that one) and its history
/tools [on|off]          the built-in workspace tools (read, list, search, write files)
/quit                    leave (also Ctrl-D)
Ctrl-C interrupts a running turn; Ctrl-C again at the prompt exits."""


PROMPT = "\u276f "  # a heavy angle quote marks the prompt


class _Sigint:
    """Returned by a read that Ctrl-C abandoned."""


SIGINT = _Sigint()

ToolHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class ChatTool:
    """A client-defined tool the chat offers the model; ``handler`` answers ``tool/call``
    with ``{content: ContentBlock[], isError?}``."""

    name: str
    description: str
    handler: ToolHandler
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    needs_approval: bool = False
    always_offer: bool = False
    """Offer it on every model call, not only when the request is about it."""

    def wire(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "needsApproval": self.needs_approval,
            "alwaysOffer": self.always_offer,
        }


# -- input -----------------------------------------------------------------------------


class LineInput:
    """Whole lines from a file descriptor, read when the event loop says it is readable.

    A regular file cannot be watched by the loop; then a worker thread reads instead.
    """

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._lines: deque[str] = deque()
        self._eof = False

    def _take(self, data: bytes) -> None:
        if not data:
            self._eof = True
            if self._buffer:
                self._lines.append(self._buffer.decode(errors="replace"))
                self._buffer.clear()
            return
        self._buffer += data
        while (nl := self._buffer.find(b"\n")) >= 0:
            self._lines.append(self._buffer[:nl].decode(errors="replace").rstrip("\r"))
            del self._buffer[: nl + 1]

    def echo(self, enabled: bool, *, discard_typeahead: bool = False) -> None:
        """Turn the terminal's echo off while an answer streams (typed keys would be
        drawn into the live area) and back on for the prompt; keys typed meanwhile
        are discarded, since the user could not see them."""
        if not os.isatty(self._fd):
            return
        with contextlib.suppress(termios.error):
            attrs = termios.tcgetattr(self._fd)
            if enabled:
                attrs[3] |= termios.ECHO
            else:
                attrs[3] &= ~termios.ECHO
            termios.tcsetattr(self._fd, termios.TCSANOW, attrs)
            if discard_typeahead:
                termios.tcflush(self._fd, termios.TCIFLUSH)

    async def readline(self) -> str | None:
        """The next line without its newline, or None at end of input."""
        loop = asyncio.get_running_loop()
        while not self._lines and not self._eof:
            ready: asyncio.Future[None] = loop.create_future()

            def on_readable(ready: asyncio.Future[None] = ready) -> None:
                try:
                    data = os.read(self._fd, 65536)
                except BlockingIOError:
                    return
                except OSError:
                    data = b""
                self._take(data)
                if (self._lines or self._eof) and not ready.done():
                    ready.set_result(None)

            try:
                loop.add_reader(self._fd, on_readable)
            except (PermissionError, ValueError, NotImplementedError):
                self._take(await asyncio.to_thread(os.read, self._fd, 65536))
                continue
            try:
                await ready
            finally:
                loop.remove_reader(self._fd)
        return self._lines.popleft() if self._lines else None


# -- rendering -------------------------------------------------------------------------


class _Tail:
    """Render only the last lines that fit the terminal: a live area taller than the
    screen cannot be redrawn, and the newest text is what a reader is watching."""

    def __init__(self, renderable: RenderableType, reserve: int) -> None:
        self.renderable = renderable
        self.reserve = reserve

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        keep = max(3, console.size.height - self.reserve)
        # Two columns short of the edge: a line that fills the last column leaves the
        # cursor waiting to wrap, and the next byte (an echoed ^C) would start a line
        # the live area does not know about, leaving a stale copy on screen.
        narrower = options.update(height=None, width=max(10, options.max_width - 2))
        lines = console.render_lines(self.renderable, narrower, pad=False)
        for line in lines[-keep:]:
            yield from line
            yield Segment.line()


class _Markdown(Markdown):
    """Markdown whose HTML is shown as written: rich drops HTML blocks and tags, so an
    answer that starts with ``<error>`` (or any tag) would not appear at all."""

    def __init__(self, markup: str) -> None:
        super().__init__(markup)
        parser = MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")
        self.parsed = parser.parse(markup)


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


def _block_text(blocks: Any) -> str:
    if isinstance(blocks, str):
        return blocks
    if isinstance(blocks, dict):
        blocks = [blocks]
    out: list[str] = []
    for b in blocks or []:
        if not isinstance(b, dict):
            continue
        inner = b.get("content") if b.get("type") == "content" else b
        if isinstance(inner, dict) and isinstance(inner.get("text"), str):
            out.append(inner["text"])
    return "".join(out)


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class _ToolLine:
    title: str
    status: str = "pending"


class TurnView:
    """What one turn looks like: streamed markdown, thoughts, running tools, usage.

    Finished pieces (a message whose id changed, a text before a tool call) are printed
    into the scrollback; only the piece still arriving and the running tools stay in
    the live area, which the event loop redraws (no refresh thread).
    """

    REFRESH = 1 / 12

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live: Live | None = None
        self.kind: str | None = None
        self.message_id: str | None = None
        self.text = ""
        self.tools: dict[str, _ToolLine] = {}
        self.context: tuple[int, int] | None = None
        self.status: str | None = "thinking…"
        """Shown with a spinner while nothing else moves: before the first token, and
        while a compaction runs."""
        self._dirty = False
        self._ticker: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.live = Live(
            console=self.console,
            auto_refresh=False,
            transient=True,
            get_renderable=self._render,
            vertical_overflow="visible",
        )
        self.live.start()
        self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.REFRESH)
            if self.live is not None and (self._dirty or self.tools or self.status):
                self._dirty = False
                self.live.refresh()

    def pause(self) -> None:
        """Take the live area down (a question is about to be asked)."""
        self.flush()
        if self.live is not None:
            self.live.stop()

    def resume(self) -> None:
        if self.live is not None:
            self.live.start()

    def stop(self) -> None:
        self.flush()
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self.live is not None:
            self.live.stop()
            self.live = None
        for tool in self.tools.values():
            self.console.print(Text(f"  ✗ {tool.title} (not finished)", style="yellow"))
        self.tools.clear()

    def _render(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self.text:
            parts.append(_Tail(self._piece(), reserve=len(self.tools) + 2))
        for tool in self.tools.values():
            parts.append(Spinner("dots", text=Text(f"{tool.title} ({tool.status})", style="cyan")))
        if self.status and not self.tools:
            parts.append(Spinner("dots", text=Text(self.status, style="dim")))
        return Group(*parts)

    def _piece(self) -> RenderableType:
        if self.kind == "thought":
            return Text(self.text, style="dim italic")
        return _Markdown(self.text)

    def flush(self) -> None:
        """Print the piece being streamed into the scrollback and start a new one.

        The live area is redrawn without the piece first: rich re-emits the live area
        after anything printed above it, so it must not still hold the piece."""
        piece = self._piece() if self.text else None
        self.text = ""
        self.kind = None
        self._dirty = True
        if self.live is not None and self.live.is_started:
            self.live.refresh()
        if piece is not None:
            self.console.print(piece)

    def chunk(self, kind: str, message_id: str | None, text: str) -> None:
        self.status = None
        if kind != self.kind or message_id != self.message_id:
            self.flush()
            self.kind, self.message_id = kind, message_id
        self.text += text
        self._dirty = True

    def tool_call(self, update: dict[str, Any]) -> None:
        self.flush()
        call_id = str(update.get("toolCallId", ""))
        title = str(update.get("title") or "tool")
        raw = update.get("rawInput")
        if raw:
            title = f"{title} {_short(raw, 60)}"
        status = str(update.get("status") or "pending")
        if status in ("completed", "failed"):
            self._done(title, status, update)
            return
        self.tools[call_id] = _ToolLine(title, status)
        self.console.print(Text(f"  ⚙ {title}", style="cyan"))
        self._dirty = True

    def tool_update(self, update: dict[str, Any]) -> None:
        call_id = str(update.get("toolCallId", ""))
        tool = self.tools.get(call_id)
        status = str(update.get("status") or (tool.status if tool else "pending"))
        if status in ("completed", "failed"):
            self.tools.pop(call_id, None)
            self._done(tool.title if tool else call_id, status, update)
            self.status = "thinking…"  # the model reads the result next
        elif tool is not None:
            tool.status = status
        self._dirty = True

    def _done(self, title: str, status: str, update: dict[str, Any]) -> None:
        cancelled = bool(((update.get("_meta") or {}).get("threadline") or {}).get("cancelled"))
        output = _short(_block_text(update.get("content")), 100)
        if cancelled:
            line = Text(f"  ✗ {title} (cancelled)", style="yellow")
        elif status == "failed":
            line = Text(f"  ✗ {title} failed", style="red")
        else:
            line = Text(f"  ✓ {title}", style="green")
        if output:
            line.append(f"  {output}", style="dim")
        self.console.print(line)

    def usage_line(self, stop: str, usage: Mapping[str, Any] | None) -> Text:
        parts = [stop]
        if usage:
            parts.append(
                f"tokens in {usage.get('inputTokens', 0)} · out {usage.get('outputTokens', 0)}"
            )
        if self.context:
            used, size = self.context
            pct = f" ({100 * used // size}%)" if size else ""
            parts.append(f"context {used}/{size}{pct}")
        return Text("↳ " + " · ".join(parts), style="dim")


# -- the chat --------------------------------------------------------------------------


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
        self.view: TurnView | None = None
        self.turn: asyncio.Task[Any] | None = None
        self.interrupting = False
        self.last_was_sigint = False
        self.quit = asyncio.Event()
        self._read: asyncio.Future[str | _Sigint | None] | None = None
        self._ask_lock = asyncio.Lock()
        self._background: set[asyncio.Task[None]] = set()

    # -- plumbing ----------------------------------------------------------------------

    async def ask(self, prompt: Text | str) -> str | _Sigint | None:
        """Print a prompt and read one line; Ctrl-C abandons the read."""
        self.console.print(prompt, end="")
        self.console.file.flush()
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str | _Sigint | None] = loop.create_future()
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
        view = self.view
        if kind == "usage_update" and view is not None:
            view.context = (int(update.get("used", 0)), int(update.get("size", 0)))
        elif kind == "compaction_update":
            status = update.get("status")
            if view is not None:
                view.status = "compacting…" if status == "in_progress" else "thinking…"
            if status != "in_progress" or view is None:
                self.console.print(Text(f"  ⋯ compaction {status}", style="dim"))
        elif view is None:
            return
        elif kind in ("agent_message_chunk", "agent_thought_chunk"):
            text = _block_text(update.get("content"))
            view.chunk(
                "thought" if kind == "agent_thought_chunk" else "text",
                update.get("messageId"),
                text,
            )
        elif kind == "tool_call":
            view.tool_call(update)
        elif kind == "tool_call_update":
            view.tool_update(update)

    async def on_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        async with self._ask_lock:
            if self.view is not None:
                self.view.pause()
            self.lines.echo(True)
            try:
                return await self._ask_permission(params)
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
        if call.get("rawInput"):
            self.console.print(Text(f"    {_short(call['rawInput'], 200)}", style="dim"))
        menu = "  ".join(
            f"[{i}] {o.get('name', o.get('optionId'))}" for i, o in enumerate(options, 1)
        )
        self.console.print(Text(f"    {menu}"))
        while True:
            answer = await self.ask(Text(f"    choose 1-{len(options)}: ", style="yellow"))
            if isinstance(answer, _Sigint) or answer is None:
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
        init = await self.client.initialize(fs={"readTextFile": True, "writeTextFile": True})
        meta = ((init.get("agentCapabilities") or {}).get("_meta") or {}).get("threadline") or {}
        self.models = _offered(meta.get("models"))
        self.default_model = str(meta.get("defaultModel") or "")
        if session_id:
            await self.resume(session_id)
            if model:
                await self.set_model(model)
        else:
            self.start_new(model)

    def start_new(self, model: str | None) -> None:
        """A new session, created (and stored) when the first prompt is sent."""
        self.session_id = ""
        self.pending_model = model
        self.model = model or self.default_model
        self.console.print(
            Text(f"new session · model {_short(self.model, 48)}", style="dim"), highlight=False
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
        warning = ((result.get("_meta") or {}).get("threadline") or {}).get("warning")
        if warning:
            self.console.print(Text(f"warning: {warning}", style="yellow"), highlight=False)
        self.console.print(
            Text(f"session {self.session_id}", style="dim"),
            highlight=False,
        )

    def _take_config(self, options: Any) -> None:
        for opt in options or []:
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
        await self.client.request("session/resume", {"sessionId": session_id, "cwd": self.cwd})
        self.session_id = session_id
        for s in await self.client.list_sessions():
            if s.get("sessionId") == session_id:
                self.model = str((s.get("_meta") or {}).get("model") or "")
        self.console.print(
            Text(f"resumed {session_id} · model {_short(self.model, 48)}", style="dim"),
            highlight=False,
        )
        history = await self.client.history(session_id)
        for m in history[-4:]:
            text = "".join(
                b.get("text", "")
                for b in m.get("content", [])
                if b.get("type") in ("text", "summary")
            )
            if text:
                who = "you" if m.get("role") == "user" else m.get("role", "")
                self.console.print(Text(f"  [{m.get('messageId')}] {who}: ", style="dim"), end="")
                self.console.print(Text(_short(text, 200)), highlight=False)

    async def set_model(self, model: str) -> None:
        if not self.session_id:
            self.pending_model = self.model = model
            self.console.print(Text(f"model {self.model}", style="dim"), highlight=False)
            return
        result = await self.client.request(
            "session/set_config_option",
            {"sessionId": self.session_id, "configId": "model", "value": model},
        )
        self._take_config((result or {}).get("configOptions"))
        self.console.print(Text(f"model {self.model}", style="dim"), highlight=False)

    # -- commands ----------------------------------------------------------------------

    async def command(self, line: str) -> None:
        name, _, arg = line[1:].strip().partition(" ")
        arg = arg.strip()
        handlers: dict[str, Callable[[str], Awaitable[None]]] = {
            "fork": self.cmd_fork,
            "compact": self.cmd_compact,
            "sessions": self.cmd_sessions,
            "resume": self.cmd_resume,
            "model": self.cmd_model,
            "new": self.cmd_new,
            "delete": self.cmd_delete,
            "tools": self.cmd_tools,
            "help": self.cmd_help,
        }
        if name in ("quit", "exit", "q"):
            self.quit.set()
            return
        handler = handlers.get(name)
        if handler is None:
            self.console.print(Text(f"unknown command /{name} (try /help)", style="red"))
            return
        try:
            await handler(arg)
        except RpcError as exc:
            self.console.print(Text(f"/{name}: {exc.message}", style="red"))

    async def cmd_help(self, arg: str) -> None:
        self.console.print(Text(HELP), highlight=False)

    async def cmd_new(self, arg: str) -> None:
        self.start_new(arg or None)

    async def cmd_delete(self, arg: str) -> None:
        target = arg or self.session_id
        if not target:
            self.console.print(
                Text("nothing to delete: this session is not stored yet", style="dim")
            )
            return
        answer = await self.ask(Text(f"delete {target} and its history? [y/N] ", style="yellow"))
        if not isinstance(answer, str) or answer.strip().lower() not in ("y", "yes"):
            self.console.print(Text("kept", style="dim"))
            return
        await self.client.request("session/delete", {"sessionId": target})
        self.console.print(Text(f"deleted {target}", style="green"), highlight=False)
        if target == self.session_id:
            self.start_new(self.model or None)

    @property
    def builtin_tools(self) -> bool:
        return self.session_options.get("builtinTools", True) is not False

    async def cmd_tools(self, arg: str) -> None:
        choice = arg.strip().lower()
        if choice not in ("", "on", "off"):
            self.console.print(Text("usage: /tools [on|off]", style="red"))
            return
        if choice:
            enabled = choice == "on"
            if self.session_id:
                await self.client.request(
                    "session/set_config_option",
                    {"sessionId": self.session_id, "configId": "builtinTools", "value": enabled},
                )
            self.session_options["builtinTools"] = enabled
        state = "on" if self.builtin_tools else "off"
        self.console.print(Text(f"built-in tools: {state}", style="dim"), highlight=False)

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

    def _no_session_yet(self, what: str) -> bool:
        if self.session_id:
            return False
        self.console.print(Text(f"nothing to {what} yet: send a prompt first", style="dim"))
        return True

    async def cmd_fork(self, arg: str) -> None:
        if self._no_session_yet("fork"):
            return
        params: dict[str, Any] = {"sessionId": self.session_id, "cwd": self.cwd}
        if arg:
            params["messageId"] = arg
        result = await self.client.request("session/fork", params)
        parent, self.session_id = self.session_id, str(result["sessionId"])
        at = result.get("forkedAtMessageId") or "the end"
        self.console.print(
            Text(f"forked {parent} at {at} → {self.session_id} (now current)", style="green"),
            highlight=False,
        )

    async def cmd_compact(self, arg: str) -> None:
        if self._no_session_yet("compact"):
            return
        params: dict[str, Any] = {"sessionId": self.session_id}
        if arg:
            params["instructions"] = arg
        self.console.print(Text("compacting…", style="dim"))
        r = await self.client.request("session/compact", params)
        self.console.print(
            Text(
                f"compacted: {r.get('messagesBefore')} → {r.get('messagesAfter')} messages, "
                f"{r.get('tokensBefore')} → {r.get('tokensAfter')} tokens",
                style="green",
            ),
            highlight=False,
        )
        summary = _block_text(r.get("summary"))
        if summary:
            self.console.print(Text(_short(summary, 300), style="dim"), highlight=False)

    async def cmd_sessions(self, arg: str) -> None:
        sessions = await self.client.list_sessions()
        id_width = max((len(str(s.get("sessionId"))) for s in sessions), default=8)
        table = Table(box=None, header_style="bold", pad_edge=False)
        table.add_column("")
        table.add_column("session", no_wrap=True, min_width=id_width)
        table.add_column("updated", no_wrap=True)
        table.add_column("msgs", justify="right", no_wrap=True)
        table.add_column("model", no_wrap=True, max_width=20, overflow="ellipsis")
        table.add_column("title", no_wrap=True, overflow="ellipsis")
        for s in sessions:
            meta = s.get("_meta") or {}
            table.add_row(
                "*" if s.get("sessionId") == self.session_id else "",
                str(s.get("sessionId")),
                str(s.get("updatedAt") or "")[:16].replace("T", " "),
                str(meta.get("messageCount", "")),
                str(meta.get("model") or ""),
                str(s.get("title") or ""),
            )
        self.console.print(table, highlight=False)

    async def cmd_resume(self, arg: str) -> None:
        if not arg:
            self.console.print(Text("usage: /resume SESSION_ID (see /sessions)", style="red"))
            return
        await self.resume(arg)

    async def cmd_model(self, arg: str) -> None:
        if arg:
            await self.set_model(arg)
            return
        for m in self.models:
            mark = "*" if m.get("modelId") == self.model else " "
            self.console.print(
                Text(f" {mark} {m.get('modelId')}  {m.get('name', '')}"), highlight=False
            )
        if self.model and all(m.get("modelId") != self.model for m in self.models):
            self.console.print(Text(f" * {self.model}"), highlight=False)

    # -- turns -------------------------------------------------------------------------

    async def run_turn(self, text: str) -> None:
        try:
            await self.ensure_session()
        except RpcError as exc:
            self.console.print(Text(f"error: {exc.message}", style="red"))
            return
        self.view = TurnView(self.console)
        self.interrupting = False
        self.view.start()
        self.turn = asyncio.get_running_loop().create_task(
            self.client.prompt(self.session_id, text)
        )
        self.lines.echo(False)
        try:
            result = await self.turn
        except asyncio.CancelledError:
            if not self.quit.is_set():
                raise
            self.view.stop()
            return
        except (RpcError, ConnectionError) as exc:
            self.view.stop()
            if isinstance(exc, RpcError):
                self.console.print(Text(f"error: {exc.message}", style="red"))
                reason = (exc.data or {}).get("reason") if isinstance(exc.data, dict) else None
                if reason:
                    self.console.print(Text(f"  reason: {reason}", style="red"))
            else:
                self.console.print(Text(f"error: {exc}", style="red"))
            return
        finally:
            self.turn = None
            self.lines.echo(True, discard_typeahead=True)
        view = self.view
        view.stop()
        self.view = None
        stop = str(result.get("stopReason", ""))
        if stop == "cancelled":
            self.console.print(Text("[interrupted]", style="yellow"))
        else:
            self.last_was_sigint = False
        self.console.print(view.usage_line(stop, result.get("usage")))

    async def loop(self) -> int:
        while not self.quit.is_set():
            line = await self.ask(Text(PROMPT, style="bold magenta"))
            if line is None:  # Ctrl-D
                self.console.print()
                return 0
            if isinstance(line, _Sigint):
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
                await self.command(line)
            else:
                await self.run_turn(line[1:] if line.startswith("//") else line)
            if self.client.closed.is_set():
                self.console.print(Text("the sidecar exited", style="red"))
                return 1
        return 0


def _absolute(cwd: str | None) -> str:
    return os.path.abspath(cwd or os.getcwd())


def _default_command() -> list[str]:
    return [sys.executable, "-c", SERVE_IGNORING_SIGINT]


async def chat(
    *,
    model: str | None = None,
    session_id: str | None = None,
    cwd: str | None = None,
    command: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    console: Console | None = None,
    input_fd: int = 0,
    session_options: Mapping[str, Any] | None = None,
    tools: Sequence[ChatTool] = (),
) -> int:
    """Run the interactive chat until the user leaves; returns the exit code.

    ``session_options`` go to ``session/new`` as ``_meta.threadline`` (system prompt,
    tool budget…); ``tools`` are client-defined tools the chat itself answers.
    """
    console = console or Console(highlight=False)
    server_env = {"THREADLINE_LOG_LEVEL": os.environ.get("THREADLINE_LOG_LEVEL", "WARNING")}
    server_env.update(env or {})
    client = await ThreadlineClient.spawn(
        command or _default_command(), env=server_env, stderr=asyncio.subprocess.DEVNULL
    )
    session = Chat(
        client,
        console,
        LineInput(input_fd),
        cwd=_absolute(cwd),
        session_options=session_options or {},
        tools=tools,
    )
    client.on_update(session.on_update)
    client.on_request("session/request_permission", session.on_permission)
    client.on_request("tool/call", session.on_tool_call)
    client.on_request("fs/read_text_file", session.on_read_file)
    client.on_request("fs/write_text_file", session.on_write_file)
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, session.on_sigint)
    try:
        try:
            await session.open(session_id, model)
        except (RpcError, ConnectionError) as exc:
            console.print(Text(f"could not start: {exc}", style="red"))
            return 1
        console.print(Text("/help for commands · Ctrl-C interrupts · Ctrl-D exits", style="dim"))
        return await session.loop()
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        await client.close()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``threadline chat`` options (shared by ``cli.py`` and ``python -m``)."""
    parser.add_argument("--model", help="model id for a new session, e.g. local:smollm2-135m")
    parser.add_argument("--session", help="resume this session instead of starting one")
    parser.add_argument("--cwd", help="the session's working folder (default: here)")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(chat(model=args.model, session_id=args.session, cwd=args.cwd))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="threadline chat", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
