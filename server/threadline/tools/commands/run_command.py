"""``run_command``: run a shell command in the workspace (tests, builds, git…).

Always asks first unless a mode or a kept approval says otherwise (the permission
shows the command and the folder). In the client's terminal when it advertised
``terminal: true`` (``client_terminal.py``), else in the sidecar (``runner.py``): its
own process group, cwd inside the workspace roots, an environment without credentials
(``redact.command_env``), output streamed to the call's live content and bounded,
exit code and signal in the result. ``sandboxed=True`` confines it (``confine.py``):
what the engine uses for a command it runs without asking.
"""

from __future__ import annotations

import os
from typing import Any

from ...redact import command_env
from ..base import CommandShown, ToolContext, ToolKind, ToolOutcome, text_content
from ..sandbox import PathRefused
from ..workspace.common import ToolArgError, int_arg, named, refusal, sandbox_of
from . import confine, runner
from .client_terminal import run_in_client

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 1800
SHELL = "/bin/sh"


def client_runs_terminals(ctx: ToolContext) -> bool:
    try:
        return bool(ctx.link.client_capabilities().get("terminal"))
    except Exception:
        return False


class RunCommand:
    """Run a shell command in the workspace and read its output and exit code."""

    name = "run_command"
    description = (
        "Run a shell command in the workspace (tests, a build, git, a script); "
        "returns its output and exit code."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Shell command line"},
            "cwd": {"type": "string", "description": "Folder to run in"},
            "timeout": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT,
            },
        },
        "required": ["command"],
    }
    kind: ToolKind = "execute"
    parallelizable = False
    needs_permission = True
    timeout = float(MAX_TIMEOUT + 30)
    """The engine's own limit; the command's ``timeout`` stops it well before."""

    def __init__(self, *, sandboxed: bool = False, network: bool = False) -> None:
        self.sandboxed = sandboxed
        self.network = network

    def title(self, arguments: dict[str, Any]) -> str:
        command = arguments.get("command")
        if not isinstance(command, str):
            return "Run command"
        cwd = arguments.get("cwd")
        where = f" (in {cwd})" if isinstance(cwd, str) and cwd not in ("", ".") else ""
        return f"Run `{command}`{where}"

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        try:
            return [{"path": sandbox_of(ctx).resolve(arguments.get("cwd"), default=".").path}]
        except PathRefused:
            return []

    def _arguments(self, arguments: dict[str, Any], ctx: ToolContext) -> tuple[str, str, int]:
        command = arguments.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ToolArgError("command must be a non-empty string")
        if "\x00" in command:
            raise ToolArgError("command contains a NUL byte")
        resolved = sandbox_of(ctx).resolve(arguments.get("cwd"), default=".")
        if not os.path.isdir(resolved.real):
            raise ToolArgError(f"cwd {resolved.shown!r} is not a folder")
        timeout = int_arg(arguments, "timeout") or DEFAULT_TIMEOUT
        return command, resolved.real, min(timeout, MAX_TIMEOUT)

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        try:
            command, cwd, timeout = self._arguments(arguments, ctx)
        except (PathRefused, ToolArgError) as exc:
            return refusal(named(exc, arguments.get("cwd")))
        display: list[dict[str, Any]] = []
        where = "sidecar"
        try:
            sandboxed = self.sandboxed or ctx.confined
            if client_runs_terminals(ctx) and not sandboxed:
                finished, terminal_id = await run_in_client(ctx, command, cwd=cwd, timeout=timeout)
                display = [{"type": "terminal", "terminalId": terminal_id}]
                where = "terminal"
            else:
                argv = [SHELL, "-c", command]
                if sandboxed:
                    argv = confine.confined(
                        argv, roots=sandbox_of(ctx).real_roots, cwd=cwd, network=self.network
                    )
                    where = "sandbox"
                finished = await runner.run(
                    argv,
                    cwd=cwd,
                    env=command_env(dict(os.environ)),
                    timeout=timeout,
                    on_output=lambda text: ctx.report(
                        [text_content(text)], CommandShown(command, cwd, text)
                    ),
                )
        except OSError as exc:
            return ToolOutcome.text(f"could not start the command: {exc}", is_error=True)
        except Exception as exc:
            return ToolOutcome.text(f"the command could not run: {exc}", is_error=True)
        return _outcome(command, finished, where, display)


def _ending(f: runner.Finished) -> str:
    if f.timed_out:
        how = f" ({f.signal})" if f.signal else ""
        return f"stopped after the {f.seconds:.0f} s timeout{how}"
    if f.signal is not None:
        return f"killed by {f.signal}"
    if f.exit_code == 127:
        return "exit code 127 (command not found)"
    if f.exit_code == 126:
        return "exit code 126 (not executable)"
    return f"exit code {f.exit_code}"


def _outcome(
    command: str, f: runner.Finished, where: str, display: list[dict[str, Any]]
) -> ToolOutcome:
    ending = _ending(f)
    body = f.output if f.output.strip() else "(no output)"
    # A non-zero exit is an answer (the tests failed), not a failed call; a command
    # that had to be stopped is.
    failed = f.timed_out or f.signal is not None
    outcome = ToolOutcome.text(
        f"$ {command}\n{body}\n[{ending}]",
        is_error=failed,
        raw={
            "command": command,
            "exitCode": f.exit_code,
            "signal": f.signal,
            "timedOut": f.timed_out,
            "outputBytes": f.total_bytes,
            "ranIn": where,
        },
    )
    outcome.compact_summary = f"ran `{command}`: {ending}"
    outcome.display = display
    return outcome
