"""The slash commands (``/fork``, ``/compact``, ``/sessions``…): each a small request on
the current :class:`~.controller.Chat`, its answer printed."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

from rich.table import Table
from rich.text import Text

from ..client import RpcError
from .controller import Chat
from .rendering import block_text, short
from .work import files_text

MODES = ("ask", "plan", "code", "auto")
"""Shown by ``/mode`` before the first prompt (a session's own list replaces them)."""

WORKSPACE_CHANGED = -32015
"""A restore would overwrite files someone else changed since (``data.files``)."""

HELP = """\
/fork [LABEL|messageId]  branch this session and switch to it: after the turn labelled
                         LABEL (a2, u3: shown after each answer, by /resume and by
                         `threadline history`), or after all of it
/compact [instructions]  summarise older history to free context (Ctrl-C cancels)
/interrupt               stop the running turn of this session, in whatever window it runs
/sessions                list stored sessions
/search WORDS            search every session's titles and messages (then /resume ID)
/resume ID               switch to a stored session
/model [id]              show the models, or switch this session's model
/new [model]             start a new session (stored at its first prompt)
/delete [ID]             delete this session (or that one) and its history
/tools [on|off]          the built-in workspace tools (read, list, search, write files)
/mode [ask|plan|code|auto]  show the modes, or switch this session's mode
/approvals [remove N]    the answers kept with "Always…", or forget one of them
/diff                    the files the last turn changed, as a diff
/rewind [LABEL] [--files] [--force]  end the session before prompt LABEL (u2; default
                         the last one), its files too with --files; the cut turns are
                         kept as a session of their own
/unrewind                undo the last /rewind (files too) until the next prompt
/queue [rm N|clear|run]  the prompts waiting in this session's queue; remove one, all,
                         or let held ones run (while a turn runs, Enter queues a line
                         and a line that starts with > steers the turn)
@image PATH              (anywhere in a prompt) attach an image file (PNG, JPEG, GIF, WebP)
/quit                    leave (also Ctrl-D)
Ctrl-C interrupts a running turn; Ctrl-C again at the prompt exits."""


class Commands:
    """A line that starts with ``/``, run against the chat it was typed in."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat

    async def run(self, line: str) -> None:
        name, _, arg = line[1:].strip().partition(" ")
        arg = arg.strip()
        handlers: dict[str, Callable[[str], Awaitable[None]]] = {
            "fork": self.cmd_fork,
            "interrupt": self.cmd_interrupt,
            "compact": self.cmd_compact,
            "sessions": self.cmd_sessions,
            "search": self.cmd_search,
            "resume": self.cmd_resume,
            "model": self.cmd_model,
            "new": self.cmd_new,
            "delete": self.cmd_delete,
            "tools": self.cmd_tools,
            "mode": self.cmd_mode,
            "approvals": self.cmd_approvals,
            "diff": self.cmd_diff,
            "rewind": self.cmd_rewind,
            "unrewind": self.cmd_unrewind,
            "queue": self.cmd_queue,
            "help": self.cmd_help,
        }
        if name in ("quit", "exit", "q"):
            self.chat.quit.set()
            return
        handler = handlers.get(name)
        if handler is None:
            self.chat.console.print(Text(f"unknown command /{name} (try /help)", style="red"))
            return
        try:
            await handler(arg)
        except RpcError as exc:
            self.chat.console.print(Text(f"/{name}: {exc.message}", style="red"))

    async def cmd_queue(self, arg: str) -> None:
        if self._no_session_yet("queue"):
            return
        client, sid, say = self.chat.client, self.chat.session_id, self.chat.console.print
        verb, _, which = arg.partition(" ")
        queued = await client.queue(sid)
        if verb == "rm" and which.strip().isdigit() and 0 < int(which) <= len(queued):
            await client.remove_queued(sid, queued[int(which) - 1]["id"])
        elif verb == "clear":
            await client.remove_queued(sid)
        elif verb == "run":
            await client.resume_queue(sid)
        for n, q in enumerate(await client.queue(sid) if verb else queued, 1):
            text = short(block_text(q["prompt"]), 70)
            say(Text(f"  {n}. [{q['state']}] {'> ' if q['mode'] == 'steer' else ''}{text}"))
        if not queued and not verb:
            say(Text("  the queue is empty", style="dim"))

    async def cmd_help(self, arg: str) -> None:
        self.chat.console.print(Text(HELP), highlight=False)

    async def cmd_new(self, arg: str) -> None:
        if arg:
            await self.chat.check_model(arg)
        self.chat.start_new(arg or None)

    async def cmd_interrupt(self, arg: str) -> None:
        if self._no_session_yet("interrupt"):
            return
        result = await self.chat.client.interrupt(self.chat.session_id)
        if result.get("interrupted"):
            self.chat.console.print(
                Text(f"interrupted {result.get('turnId') or 'the turn'}", style="yellow"),
                highlight=False,
            )
        else:
            self.chat.console.print(Text("nothing is running", style="dim"))

    async def cmd_delete(self, arg: str) -> None:
        target = arg or self.chat.session_id
        if not target:
            self.chat.console.print(
                Text("nothing to delete: this session is not stored yet", style="dim")
            )
            return
        answer = await self.chat.ask(
            Text(f"delete {target} and its history? [y/N] ", style="yellow")
        )
        if not isinstance(answer, str) or answer.strip().lower() not in ("y", "yes"):
            self.chat.console.print(Text("kept", style="dim"))
            return
        await self.chat.client.request("session/delete", {"sessionId": target})
        self.chat.console.print(Text(f"deleted {target}", style="green"), highlight=False)
        if target == self.chat.session_id:
            self.chat.start_new(self.chat.model or None)

    async def cmd_tools(self, arg: str) -> None:
        choice = arg.strip().lower()
        if choice not in ("", "on", "off"):
            self.chat.console.print(Text("usage: /tools [on|off]", style="red"))
            return
        if choice:
            enabled = choice == "on"
            if self.chat.session_id:
                await self.chat.client.request(
                    "session/set_config_option",
                    {
                        "sessionId": self.chat.session_id,
                        "configId": "builtinTools",
                        "value": enabled,
                    },
                )
            self.chat.session_options["builtinTools"] = enabled
        state = "on" if self.chat.builtin_tools else "off"
        self.chat.console.print(Text(f"built-in tools: {state}", style="dim"), highlight=False)

    def _no_session_yet(self, what: str) -> bool:
        if self.chat.session_id:
            return False
        self.chat.console.print(Text(f"nothing to {what} yet: send a prompt first", style="dim"))
        return True

    async def cmd_fork(self, arg: str) -> None:
        if self._no_session_yet("fork"):
            return
        params: dict[str, Any] = {"sessionId": self.chat.session_id, "cwd": self.chat.cwd}
        if arg:
            params["messageId"] = arg
        result = await self.chat.client.request("session/fork", params)
        parent, self.chat.session_id = self.chat.session_id, str(result["sessionId"])
        at = arg or ("the end" if result.get("forkedAtMessageId") else "the start")
        self.chat.console.print(
            Text(f"forked {parent} at {at} → {self.chat.session_id} (now current)", style="green"),
            highlight=False,
        )

    async def cmd_compact(self, arg: str) -> None:
        if self._no_session_yet("compact"):
            return
        params: dict[str, Any] = {"sessionId": self.chat.session_id}
        if arg:
            params["instructions"] = arg
        self.chat.console.print(Text("compacting… (Ctrl-C cancels)", style="dim"))
        try:
            r = await self.chat.client.request("session/compact", params)
        except asyncio.CancelledError:
            self.chat.console.print(Text("compaction cancelled: nothing changed", style="yellow"))
            raise
        info = (r.get("_meta") or {}).get("threadline") or {}
        if info.get("compacted") is False:
            why = f" ({info['reason']})" if info.get("reason") else ""
            self.chat.console.print(Text(f"nothing to compact yet{why}", style="dim"))
            return
        # The summary replaces the messages it covers: one message in their place.
        replaced = int(r.get("messagesBefore", 0)) - int(r.get("messagesAfter", 0)) + 1
        self.chat.console.print(
            Text(
                f"compacted: {replaced} older message{'s' if replaced != 1 else ''} summarised, "
                f"{r.get('tokensBefore')} → {r.get('tokensAfter')} tokens",
                style="green",
            ),
            highlight=False,
        )
        summary = block_text(r.get("summary"))
        if summary:
            self.chat.console.print(
                Text(f"summary: {short(summary, 300)}", style="dim"), highlight=False
            )

    async def cmd_sessions(self, arg: str) -> None:
        sessions = await self.chat.client.list_sessions()
        id_width = max((len(str(s.get("sessionId"))) for s in sessions), default=8)
        table = Table(box=None, header_style="bold", pad_edge=False)
        # The current session's mark is part of its cell: rich drops a narrow column of
        # its own when the title must be cut. The count keeps its width too.
        table.add_column("  session", no_wrap=True, min_width=id_width + 2)
        table.add_column("updated", no_wrap=True, min_width=16)
        table.add_column("msgs", justify="right", no_wrap=True, min_width=4)
        table.add_column("model", no_wrap=True, max_width=20, overflow="ellipsis")
        table.add_column("title", no_wrap=True, overflow="ellipsis")
        for s in sessions:
            meta = s.get("_meta") or {}
            mark = "*" if s.get("sessionId") == self.chat.session_id else " "
            table.add_row(
                f"{mark} {s.get('sessionId')}",
                str(s.get("updatedAt") or "")[:16].replace("T", " "),
                str(meta.get("messageCount", "")),
                str(meta.get("model") or ""),
                str(s.get("title") or ""),
            )
        self.chat.console.print(table, highlight=False)

    async def cmd_search(self, arg: str) -> None:
        if not arg:
            self.chat.console.print(Text("usage: /search WORDS", style="red"))
            return
        result = await self.chat.client.request("session/search", {"query": arg, "limit": 20})
        if not result["hits"]:
            self.chat.console.print(Text(f"nothing found for {arg!r}", style="dim"))
            return
        for hit in result["hits"]:
            line = Text(f"{hit['sessionId']}  ", style="dim")
            line.append(short(hit.get("title") or "", 40), style="bold")
            line.append(f"  {hit['role']}: ")
            for span in hit["snippet"]:
                text = re.sub(r"\s+", " ", span["text"])  # one line per hit
                line.append(text, style="reverse" if span["match"] else "")
            self.chat.console.print(line, highlight=False, no_wrap=True, overflow="ellipsis")

    async def cmd_resume(self, arg: str) -> None:
        if not arg:
            self.chat.console.print(Text("usage: /resume SESSION_ID (see /sessions)", style="red"))
            return
        await self.chat.resume(arg)

    async def cmd_model(self, arg: str) -> None:
        if arg:
            await self.chat.set_model(arg)
            return
        for m in self.chat.models:
            mark = "*" if m.get("modelId") == self.chat.model else " "
            self.chat.console.print(
                Text(f" {mark} {m.get('modelId')}  {m.get('name', '')}"), highlight=False
            )
        if self.chat.model and all(m.get("modelId") != self.chat.model for m in self.chat.models):
            self.chat.console.print(Text(f" * {self.chat.model}"), highlight=False)

    async def cmd_mode(self, arg: str) -> None:
        chat = self.chat
        if arg:
            if chat.session_id:
                await chat.client.request(
                    "session/set_mode", {"sessionId": chat.session_id, "modeId": arg}
                )
            else:
                chat.session_options["mode"] = arg  # ``session/new`` takes it
            chat.mode = arg  # ``current_mode_update`` says so too, once the session has one
            chat.console.print(Text(f"mode {arg}", style="dim"), highlight=False)
            return
        modes = chat.modes or [{"id": m, "name": m} for m in MODES]
        current = chat.mode or "code"
        for m in modes:
            mark = "*" if m.get("id") == current else " "
            line = Text(f" {mark} {m.get('id')}")
            if m.get("description"):
                line.append(f"  {m['description']}", style="dim")
            chat.console.print(line, highlight=False)

    async def cmd_approvals(self, arg: str) -> None:
        if self._no_session_yet("list"):
            return
        sid = self.chat.session_id
        rules = (await self.chat.client.request("session/approvals", {"sessionId": sid}))["rules"]
        verb, _, which = arg.partition(" ")
        if verb in ("remove", "rm", "delete"):
            which = which.strip()
            picked = [r for i, r in enumerate(rules, 1) if which in (str(i), str(r.get("id")))]
            if not picked:
                self.chat.console.print(
                    Text("usage: /approvals remove N (N as /approvals numbers them)", style="red")
                )
                return
            rules = (
                await self.chat.client.request(
                    "session/remove_approval", {"sessionId": sid, "ruleId": picked[0]["id"]}
                )
            )["rules"]
            self.chat.console.print(
                Text(f"removed: {_rule_text(picked[0])}", style="green"), highlight=False
            )
        elif arg:
            self.chat.console.print(Text("usage: /approvals [remove N]", style="red"))
            return
        if not rules:
            self.chat.console.print(Text("no kept answers", style="dim"))
        for i, r in enumerate(rules, 1):
            self.chat.console.print(Text(f" [{i}] {_rule_text(r)}"), highlight=False)

    async def cmd_diff(self, arg: str) -> None:
        if self._no_session_yet("diff"):
            return
        params: dict[str, Any] = {"sessionId": self.chat.session_id}
        if arg:
            params["fromMessageId"] = await self._prompt_id(arg)
        result = await self.chat.client.request("session/diff", params)
        self.chat.console.print(files_text(result), end="", highlight=False)

    async def _prompt_id(self, label: str) -> str:
        """The message id of prompt ``label`` (``u2``, ``2`` or a message id); the
        last prompt without one."""
        history = await self.chat.client.history(self.chat.session_id)
        prompts = [m for m in history if m.get("role") == "user"]
        if not label:
            if not prompts:
                raise RpcError(-32602, "no prompt to go back before")
            return str(prompts[-1]["messageId"])
        want = f"u{label}" if label.isdigit() else label
        for m in prompts:
            if want in (m.get("turnId"), m.get("messageId")):
                return str(m["messageId"])
        raise RpcError(-32602, f"no prompt {label} (labels as /resume shows them: u1, u2…)")

    async def cmd_rewind(self, arg: str) -> None:
        if self._no_session_yet("rewind"):
            return
        words = arg.split()
        label = next((w for w in words if not w.startswith("--")), "")
        params: dict[str, Any] = {
            "sessionId": self.chat.session_id,
            "beforeMessageId": await self._prompt_id(label),
            "restoreFiles": "--files" in words,
            "force": "--force" in words,
        }
        try:
            result = await self.chat.client.request("session/rewind", params)
        except RpcError as exc:
            self._refused(exc, "rewind")
            return
        self.chat.last_rewind = str(result["rewindId"])
        self.chat.console.print(
            Text(
                f"rewound before {label or 'the last prompt'}: {result['messageCount']} "
                f"messages left; the cut turns are session {result['rewindId']} "
                "(/unrewind undoes this until the next prompt)",
                style="green",
            ),
            highlight=False,
        )
        self._files(result.get("files"))

    async def cmd_unrewind(self, arg: str) -> None:
        if not self.chat.session_id or not self.chat.last_rewind:
            self.chat.console.print(Text("nothing to unrewind", style="dim"))
            return
        params: dict[str, Any] = {
            "sessionId": self.chat.session_id,
            "rewindId": self.chat.last_rewind,
            "force": "--force" in arg.split(),
        }
        try:
            result = await self.chat.client.request("session/unrewind", params)
        except RpcError as exc:
            self._refused(exc, "unrewind")
            return
        self.chat.last_rewind = ""
        self.chat.console.print(
            Text(f"unrewound: {result['messageCount']} messages", style="green"), highlight=False
        )
        self._files(result.get("files"))

    def _refused(self, exc: RpcError, what: str) -> None:
        self.chat.console.print(Text(f"/{what}: {exc.message}", style="red"), highlight=False)
        data = exc.data if isinstance(exc.data, dict) else {}
        if exc.code == WORKSPACE_CHANGED:
            for path in data.get("files") or []:
                self.chat.console.print(Text(f"  changed since: {path}", style="red"))
            self.chat.console.print(
                Text(f"  /{what} … --force restores anyway (after saving them)", style="dim")
            )

    def _files(self, files: Any) -> None:
        for key, verb in (("written", "restored"), ("deleted", "deleted")):
            for path in (files or {}).get(key) or []:
                self.chat.console.print(Text(f"  {verb} {path}", style="dim"), highlight=False)


def _rule_text(rule: dict[str, Any]) -> str:
    """``allow edit_file in this workspace``, ``reject run_command `npm test …```."""
    verb = "allow" if rule.get("allow") else "reject"
    scope = rule.get("scope")
    if scope == "workspace":
        what = "edits in this workspace"
    elif scope == "prefix":
        what = f"`{rule.get('prefix')} …`"
    elif scope == "exact":
        what = f"`{rule.get('prefix')}`"
    else:
        what = str(rule.get("tool"))
    return f"{verb} {what}" + (f" ({rule.get('tool')})" if scope != "tool" else "")
