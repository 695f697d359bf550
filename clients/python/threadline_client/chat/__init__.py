"""``threadline chat``: an interactive terminal chat with a Threadline sidecar.

The answer streams as markdown (a rich ``Live`` area that shows the tail of what is
arriving, then prints the finished piece into the scrollback). Ctrl-C during a turn
sends ``session/interrupt``; the turn ends with ``cancelled`` and the partial answer
stays in the session. Ctrl-C at the prompt right after that (or twice in a row) exits,
as does Ctrl-D. Tool calls show while they run, permission requests are asked in the
terminal, and each turn ends with a token-usage line.

Slash commands (see ``/help``): ``/fork [label]``, ``/compact [instructions]``,
``/interrupt``,
``/sessions``, ``/resume ID``, ``/model [id]``, ``/new``, ``/delete [ID]``, ``/tools``,
``/mode [name]``, ``/approvals [remove N]``, ``/diff``, ``/rewind [label] [--files]``,
``/unrewind``, ``/quit``. Edits show as coloured diffs, commands' output as it
streams, the plan as a checklist. The chat reads and writes files for the sidecar
(``fs/*``), so the built-in ``write_file`` tool is offered, and asks before each write.

A new session is stored when its first prompt is sent: starting the chat and leaving
leaves nothing behind.

The rooms: ``input`` (lines from the terminal), ``rendering`` (what a turn looks like),
``controller`` (the session, the sidecar's requests, turns, Ctrl-C), ``commands`` (the
slash commands), ``work`` (diffs, command output, the plan), ``tools`` (tools the chat
defines); this module starts and wires them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from ..client import RpcError, ThreadlineClient
from .commands import Commands
from .controller import Chat
from .input import LineInput
from .tools import ChatTool

__all__ = ["ChatTool", "add_arguments", "chat", "main", "run"]

SERVE_IGNORING_SIGINT = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "sys.argv = ['threadline', 'serve']; runpy.run_module('threadline', run_name='__main__')"
)
"""The sidecar shares the terminal's process group, so the terminal's Ctrl-C would
reach it too and kill it mid-turn; it ignores SIGINT and the chat interrupts the turn
over the protocol instead."""


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
    client.on_request("elicitation/create", session.on_question)
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
            why = f"{exc} ({exc.code})" if isinstance(exc, RpcError) else str(exc)
            console.print(Text(f"could not start: {why}", style="red"))
            return 1
        console.print(Text("/help for commands · Ctrl-C interrupts · Ctrl-D exits", style="dim"))
        return await session.loop(Commands(session).run)
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        await client.close()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``threadline chat`` options (shared by ``threadline chat`` and ``python -m``)."""
    parser.add_argument("--model", help="model id for a new session, e.g. local:smollm2-135m")
    parser.add_argument("--session", help="resume this session instead of starting one")
    parser.add_argument("--cwd", help="the session's working folder (default: here)")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(chat(model=args.model, session_id=args.session, cwd=args.cwd))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="threadline chat", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
