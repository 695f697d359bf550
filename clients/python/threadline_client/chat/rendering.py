"""How a turn looks in the terminal: streamed markdown, thoughts, running tools, usage."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text

from ..ask import INTERRUPTED
from .work import diff_items, edit_diff, output_tail, plan_text


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


def block_text(blocks: Any) -> str:
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


def short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def recap(message: dict[str, Any]) -> tuple[str, str, str] | None:
    """(label, who, text) of a stored message for the resume recap; the label is the
    one ``threadline history`` prints and ``/fork`` takes."""
    blocks = message.get("content") or []
    summary = "".join(b.get("text", "") for b in blocks if b.get("type") == "summary")
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    label = str(message.get("turnId") or message.get("messageId"))
    if summary:
        return label, "summary of the earlier conversation", summary
    if not text:
        return None
    who = "you" if message.get("role") == "user" else str(message.get("role", ""))
    if message.get("truncated"):
        who += " (interrupted)" if message.get("error") == INTERRUPTED else " (cut off)"
    return label, who, text


TUNING = frozenset({"model", "context"})
"""Arguments that tune a call (a ``delegate`` call's model) rather than say what it does."""


def says(title: str, raw: Any) -> bool:
    """The title quotes the call's arguments already (``Run `make test```)."""
    if not isinstance(raw, dict):
        return False
    values = [v for k, v in raw.items() if isinstance(v, str) and k not in TUNING]
    return bool(values) and all(" ".join(v.split()) in " ".join(title.split()) for v in values)


@dataclass
class _ToolLine:
    title: str
    status: str = "pending"
    kind: str = ""
    output: str = ""
    """A command's output so far (``run_command`` streams it into the call's updates),
    or what a child session did so far (``delegate``)."""
    child: str = ""
    """The child session a ``delegate`` call runs (``_meta.threadline.childSessionId``)."""


CHILD_LINES = 3
"""Lines of a running child session's progress shown under its ``delegate`` call."""


def child_session(update: dict[str, Any]) -> str:
    """The child session a ``delegate`` call's update names ("" for other calls)."""
    meta = (update.get("_meta") or {}).get("threadline") or {}
    return str(meta.get("childSessionId") or "")


class TurnView:
    """What one turn looks like: streamed markdown, thoughts, running tools, usage.

    Finished pieces (a message whose id changed, a text before a tool call) are printed
    into the scrollback; only the piece still arriving and the running tools stay in
    the live area, which the event loop redraws (no refresh thread).
    """

    REFRESH = 1 / 12

    def __init__(self, console: Console, cwd: str = "") -> None:
        self.console = console
        self.cwd = cwd
        self.shown_diffs: set[str] = set()
        """Calls whose diff is on screen already (the permission question shows it)."""
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
            if tool.output:
                # A child's progress is kept compact: its last few lines only.
                parts.append(
                    output_tail(tool.output, CHILD_LINES)
                    if tool.child
                    else output_tail(tool.output)
                )
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
        if raw and not says(title, raw):
            title = f"{title} {short(raw, 60)}"
        status = str(update.get("status") or "pending")
        kind = str(update.get("kind") or "")
        if status in ("completed", "failed"):
            self._done(call_id, title, status, update, kind)
            return
        self.tools[call_id] = _ToolLine(title, status, kind)
        self.console.print(Text(f"  ⚙ {title}", style="cyan"))
        self._dirty = True

    def tool_update(self, update: dict[str, Any]) -> None:
        call_id = str(update.get("toolCallId", ""))
        tool = self.tools.get(call_id)
        status = str(update.get("status") or (tool.status if tool else "pending"))
        if status in ("completed", "failed"):
            self.tools.pop(call_id, None)
            title = tool.title if tool else call_id
            self._done(call_id, title, status, update, tool.kind if tool else "")
            self.status = "thinking…"  # the model reads the result next
        elif tool is not None:
            tool.status = status
            child = child_session(update)
            if child:
                tool.child = child
            if (tool.kind == "execute" or tool.child) and update.get("content"):
                tool.output = block_text(update.get("content"))
        self._dirty = True

    def show_diffs(self, call_id: str, content: Any) -> None:
        """Print an edit's diff (once per call)."""
        items = diff_items(content)
        if not items or call_id in self.shown_diffs:
            return
        self.shown_diffs.add(call_id)
        for item in items:
            self.console.print(edit_diff(item, self.cwd), end="", highlight=False)

    def plan(self, entries: Any) -> None:
        """ACP's ``plan`` update: the whole list, printed as a checklist."""
        self.flush()
        self.console.print(plan_text(entries), end="", highlight=False)
        self._dirty = True

    def _done(
        self, call_id: str, title: str, status: str, update: dict[str, Any], kind: str
    ) -> None:
        cancelled = bool(((update.get("_meta") or {}).get("threadline") or {}).get("cancelled"))
        text = block_text(update.get("content"))
        output = "" if kind == "execute" else short(text, 100)
        if cancelled:
            line = Text(f"  ✗ {title} (cancelled)", style="yellow")
        elif status == "failed":
            line = Text(f"  ✗ {title} failed", style="red")
        else:
            line = Text(f"  ✓ {title}", style="green")
        child = child_session(update)
        if child:
            output = ""  # the child's answer goes to the model; the child session has it all
            line.append(f"  → child session {child} (open it: /resume {child})", style="dim")
        if output:
            line.append(f"  {output}", style="dim")
        self.console.print(line)
        self.show_diffs(call_id, update.get("content"))
        if kind == "execute" and text:
            self.console.print(output_tail(text), end="", highlight=False)

    def usage_line(
        self,
        stop: str,
        usage: Mapping[str, Any] | None,
        label: str | None = None,
        mode: str = "",
    ) -> Text:
        """``↳ end_turn · tokens … · context … · mode code · /fork a2``: ``a2`` is the
        answer's label, as ``threadline history`` prints it, and the command that
        branches there."""
        parts = [stop]
        if usage:
            parts.append(
                f"tokens in {usage.get('inputTokens', 0)} · out {usage.get('outputTokens', 0)}"
            )
        if self.context:
            used, size = self.context
            pct = f" ({100 * used // size}%)" if size else ""
            parts.append(f"context {used}/{size}{pct}")
        if mode:
            parts.append(f"mode {mode}")
        if label:
            parts.append(f"/fork {label}")
        return Text("↳ " + " · ".join(parts), style="dim")
