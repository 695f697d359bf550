"""Running a command in the client's own terminal (ACP ``terminal/*``).

For a client that advertised ``terminal: true`` the editor runs the command where the
user can watch it: ``terminal/create``, the terminal shown on the tool call at once
(``{type: "terminal", terminalId}``), ``terminal/wait_for_exit``, ``terminal/output``
for what the model reads, ``terminal/release``. A timeout or an interrupt sends
``terminal/kill`` then ``terminal/release``: the terminal is always released, the
command never left running.
"""

from __future__ import annotations

import time

import anyio

from threadline_protocol import work as pw

from ..base import ToolContext, terminal_content
from .output import BoundedOutput
from .runner import Finished

OUTPUT_BYTE_LIMIT = 64 * 1024
"""What the client is asked to keep (ACP ``outputByteLimit``): it keeps the end."""
RELEASE_WITHIN = 5.0
"""Seconds a kill and release may take once the turn no longer waits."""


async def run_in_client(
    ctx: ToolContext, command: str, *, cwd: str, timeout: float
) -> tuple[Finished, str]:
    """Run ``command`` in the client's terminal; (how it ended, the terminal id).
    Raises what the client's ``terminal/create`` answer raised when it refuses."""
    started = time.monotonic()
    created = await ctx.link.create_terminal(
        pw.CreateTerminalParams(
            session_id=ctx.session_id,
            command="/bin/sh",
            args=["-c", command],
            cwd=cwd,
            output_byte_limit=OUTPUT_BYTE_LIMIT,
        )
    )
    ref = pw.TerminalRef(session_id=ctx.session_id, terminal_id=created.terminal_id)
    ctx.report([terminal_content(created.terminal_id)])
    timed_out = False
    exited: pw.WaitForExitResult | None = None
    try:
        with anyio.move_on_after(timeout) as deadline:
            exited = await ctx.link.wait_for_terminal_exit(ref)
        timed_out = deadline.cancelled_caught
        if timed_out:
            await ctx.link.kill_terminal(ref)
        output = await ctx.link.terminal_output(ref)
    except BaseException:
        with anyio.CancelScope(shield=True), anyio.move_on_after(RELEASE_WITHIN):
            try:
                await ctx.link.kill_terminal(ref)
            finally:
                await ctx.link.release_terminal(ref)
        raise
    with anyio.CancelScope(shield=True), anyio.move_on_after(RELEASE_WITHIN):
        await ctx.link.release_terminal(ref)
    status = output.exit_status or (
        pw.TerminalExitStatus(exit_code=exited.exit_code, signal=exited.signal)
        if exited is not None
        else pw.TerminalExitStatus()
    )
    kept = BoundedOutput()
    kept.add(output.output.encode("utf-8", "surrogatepass"))
    text = kept.text()
    if output.truncated:
        text = "… (the terminal kept only the end) …\n" + text
    finished = Finished(
        exit_code=status.exit_code,
        signal=status.signal,
        output=text,
        total_bytes=kept.total,
        binary=kept.binary,
        timed_out=timed_out,
        seconds=time.monotonic() - started,
    )
    return finished, created.terminal_id
