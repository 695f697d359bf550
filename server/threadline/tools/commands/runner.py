"""Running a command in the sidecar: its own process group, output streamed and
bounded, and nothing left running afterwards.

The command runs under ``/bin/sh -c`` in a new session (so a process group of its
own, and no controlling terminal), stdin closed, stdout and stderr in one pipe read as
it arrives. Output goes to a :class:`BoundedOutput` and, coalesced, to the caller's
``on_output`` (the tool call's live content). When the command ends, when it times
out, and when the turn is interrupted, the whole group is stopped: SIGTERM, then
SIGKILL :data:`KILL_GRACE` seconds later, so no process it started outlives it and an
interrupt takes under a second even for a process that ignores SIGTERM.

The sidecar itself may die (``kill -9``) while a command runs. A *watchdog* sees to
that: a tiny ``sh`` outside the group, whose stdin is a pipe only the sidecar holds;
when the pipe closes (the sidecar is gone, however it went) it kills the group.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio
import anyio.abc

from .output import BoundedOutput

log = logging.getLogger(__name__)

KILL_GRACE = 0.4
"""Seconds between SIGTERM and SIGKILL: well inside the 1 s an interrupt may take."""
COALESCE = 0.25
"""Seconds between two live output updates."""
DRAIN_AFTER_EXIT = 0.3
"""Seconds to keep reading after the shell exits (output still in the pipe); then
whatever still holds the pipe (a background job) is killed with the group."""
READ_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class Finished:
    """How a command ended."""

    exit_code: int | None
    signal: str | None
    output: str
    total_bytes: int
    binary: bool
    timed_out: bool
    seconds: float


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _watchdog(pgid: int) -> subprocess.Popen[bytes]:
    """A process that kills group ``pgid`` once its stdin closes (the sidecar died)."""
    return subprocess.Popen(
        ["/bin/sh", "-c", f"read _ignored; kill -KILL -{pgid} 2>/dev/null"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def _stop_watchdog(dog: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        dog.kill()
    dog.wait()
    if dog.stdin is not None:
        dog.stdin.close()


async def _stop_group(process: anyio.abc.Process, pgid: int) -> None:
    """SIGTERM the group, SIGKILL it after :data:`KILL_GRACE`, reap the shell."""
    _killpg(pgid, signal.SIGTERM)
    with anyio.move_on_after(KILL_GRACE):
        await process.wait()
    _killpg(pgid, signal.SIGKILL)
    await process.wait()


async def run(
    argv: Sequence[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout: float,
    on_output: Callable[[str], None] | None = None,
) -> Finished:
    """Run ``argv`` to the end (or ``timeout``); cancelling kills it within a second.
    Raises ``OSError`` when it cannot start at all."""
    started = time.monotonic()
    out = BoundedOutput()
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    pgid = process.pid  # a session leader leads its own process group
    dog = _watchdog(pgid)
    timed_out = False
    last_shown = 0.0
    shown_bytes = -1

    def show(force: bool = False) -> None:
        nonlocal last_shown, shown_bytes
        if on_output is None or out.total == shown_bytes:
            return
        now = time.monotonic()
        if force or now - last_shown >= COALESCE:
            last_shown, shown_bytes = now, out.total
            on_output(out.text())

    pumped = anyio.Event()

    async def pump() -> None:
        assert process.stdout is not None
        try:
            async for chunk in process.stdout:
                out.add(chunk)
                show()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            pumped.set()

    try:
        with anyio.move_on_after(timeout) as deadline:
            async with anyio.create_task_group() as tg:
                tg.start_soon(pump)
                await process.wait()
                # The shell is done; what is left in the pipe comes now. A background
                # job that holds the pipe open is stopped with the rest of the group,
                # and one that left the group is not waited for.
                with anyio.move_on_after(DRAIN_AFTER_EXIT):
                    await pumped.wait()
                _killpg(pgid, signal.SIGKILL)
                with anyio.move_on_after(DRAIN_AFTER_EXIT):
                    await pumped.wait()
                tg.cancel_scope.cancel()
        timed_out = deadline.cancelled_caught
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                await _stop_group(process, pgid)
            else:
                _killpg(pgid, signal.SIGKILL)
            await anyio.to_thread.run_sync(_stop_watchdog, dog)
            if process.stdout is not None:
                await process.stdout.aclose()
    show(force=True)
    code = process.returncode
    exit_code, sig = (code, None) if code is not None and code >= 0 else (None, None)
    if code is not None and code < 0:
        sig = _signal_name(-code)
    elif code is not None and code > 128 and timed_out:
        exit_code, sig = None, _signal_name(code - 128)
    return Finished(
        exit_code=exit_code,
        signal=sig,
        output=out.text(),
        total_bytes=out.total,
        binary=out.binary,
        timed_out=timed_out,
        seconds=time.monotonic() - started,
    )
