"""``run_command`` with real processes: the sidecar runner (process group, streamed and
bounded output, exit codes and signals, timeouts and interrupts that leave nothing
running, even when the sidecar is killed), the client-terminal path, and the
bubblewrap sandbox (no writes outside the roots, no loopback, tests still run)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests import realparts
from tests.support import patience
from tests.tools.fakes import FakeEditor, make_ctx
from threadline.redact import command_env
from threadline.tools.base import ToolOutcome
from threadline.tools.commands import runner
from threadline.tools.commands.output import HEAD_BYTES, TAIL_BYTES
from threadline.tools.commands.run_command import RunCommand

pytestmark = pytest.mark.timeout(60)

needs_bwrap = pytest.mark.realpart("bubblewrap")
"""Installed by the suite when missing (tests/realparts.py), never skipped."""


def text_of(outcome: ToolOutcome) -> str:
    return outcome.content[0]["text"]


def alive(marker: str) -> list[int]:
    """Pids of processes whose command line holds ``marker``."""
    found: list[int] = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            st = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if marker.encode() in cmdline and ") Z" not in st:
            found.append(int(pid))
    return found


def gone(marker: str, within: float = 2.0) -> bool:
    """Whether every process holding ``marker`` is gone (SIGKILL is delivered at once
    but a loaded machine takes a moment to tear a process down)."""
    deadline = time.monotonic() + within
    while alive(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def marker() -> str:
    """A sleep length no other test uses, to find this test's processes by."""
    return f"{3000 + os.getpid() % 1000}.{time.monotonic_ns() % 10_000}"


async def run(ws: Path, args: dict[str, Any], **ctx: Any) -> tuple[ToolOutcome, list[str]]:
    shown: list[str] = []

    def progress(content: list[dict[str, Any]]) -> None:
        for item in content:
            if item["type"] == "content":
                shown.append(item["content"]["text"])
            else:
                shown.append(f"<{item['type']} {item.get('terminalId')}>")

    editor = ctx.pop("editor", FakeEditor())
    out = await RunCommand(**ctx).run(args, make_ctx(ws, editor, progress=progress))
    return out, shown


async def test_output_exit_code_and_streamed_content(tmp_path: Path) -> None:
    out, shown = await run(tmp_path, {"command": "echo out; echo err >&2; exit 3"})
    assert not out.is_error  # a non-zero exit is an answer, not a failed call
    assert text_of(out) == "$ echo out; echo err >&2; exit 3\nout\nerr\n\n[exit code 3]"
    assert out.raw_output == {
        "command": "echo out; echo err >&2; exit 3",
        "exitCode": 3,
        "signal": None,
        "timedOut": False,
        "outputBytes": 8,
        "ranIn": "sidecar",
    }
    assert shown and shown[-1] == "out\nerr\n"


async def test_output_streams_while_the_command_runs(tmp_path: Path) -> None:
    script = "echo first; sleep 0.6; echo second"
    out, shown = await run(tmp_path, {"command": script})
    assert shown[0] == "first\n"  # shown before the command ended
    assert shown[-1] == "first\nsecond\n"
    assert "[exit code 0]" in text_of(out)


async def test_cwd_and_environment_without_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "sub").mkdir()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-2")
    monkeypatch.setenv("GH_TOKEN", "ghp-secret-3")
    monkeypatch.setenv("HARMLESS_SETTING", "kept")
    out, _ = await run(tmp_path, {"command": "pwd; env", "cwd": "sub"})
    text = text_of(out)
    assert f"\n{tmp_path.resolve() / 'sub'}\n" in text
    assert "HARMLESS_SETTING=kept" in text and "PAGER=cat" in text
    assert "secret" not in text
    env = command_env({"OPENAI_API_KEY": "x", "MY_DB_PASSWORD": "y", "PATH": "/bin"})
    assert env["PATH"] == "/bin" and "OPENAI_API_KEY" not in env and "MY_DB_PASSWORD" not in env


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"command": "ls", "cwd": "../"}, "refused:"),
        ({"command": "ls", "cwd": "/etc"}, "outside the workspace"),
        ({"command": "ls", "cwd": "file.txt"}, "is not a folder"),
        ({"command": "  "}, "non-empty string"),
        ({"command": "echo \x00"}, "NUL"),
    ],
)
async def test_bad_arguments_are_refused(
    tmp_path: Path, args: dict[str, Any], message: str
) -> None:
    (tmp_path / "file.txt").write_text("x")
    out, shown = await run(tmp_path, args)
    assert out.is_error and message in text_of(out), text_of(out)
    assert shown == []


async def test_command_not_found_is_said_plainly(tmp_path: Path) -> None:
    out, _ = await run(tmp_path, {"command": "no-such-command-here --flag"})
    assert "not found" in text_of(out)
    assert text_of(out).endswith("[exit code 127 (command not found)]")


async def test_huge_output_keeps_head_and_tail(tmp_path: Path) -> None:
    command = "echo START; yes 0123456789 | head -c 100000000; echo; echo END"
    out, shown = await run(tmp_path, {"command": command})
    text = text_of(out)
    assert text.startswith("$ " + command + "\nSTART\n")
    assert text.endswith("END\n\n[exit code 0]")
    assert "bytes left out …" in text
    assert len(text) < HEAD_BYTES + TAIL_BYTES + 1000
    assert out.raw_output["outputBytes"] == 100_000_000 + len("START\n\nEND\n")
    assert all(len(s) < HEAD_BYTES + TAIL_BYTES + 100 for s in shown)


async def test_binary_output_is_not_shown_as_text(tmp_path: Path) -> None:
    out, _ = await run(tmp_path, {"command": "head -c 5000 /dev/urandom; printf '\\0'"})
    assert "[binary output, 5001 bytes, not shown]" in text_of(out)


async def test_a_timeout_kills_a_process_that_ignores_sigterm(tmp_path: Path) -> None:
    m = marker()
    command = f"trap '' TERM; sleep {m} & trap '' TERM; wait"
    started = time.monotonic()
    out, _ = await run(tmp_path, {"command": command, "timeout": 1})
    assert time.monotonic() - started < 1 + runner.KILL_GRACE + 2.0
    assert out.is_error
    assert "stopped after the 1 s timeout" in text_of(out)
    assert out.raw_output["timedOut"] is True
    assert gone(m), alive(m)


async def test_an_interrupt_kills_the_whole_group_within_a_second(tmp_path: Path) -> None:
    m = marker()
    command = f"trap '' TERM; sleep {m} & sleep {m} & echo started; wait"
    seen = anyio.Event()
    cancelled_at = 0.0

    def progress(content: list[dict[str, Any]]) -> None:
        seen.set()

    ctx = make_ctx(tmp_path, FakeEditor(), progress=progress)
    async with anyio.create_task_group() as tg:
        tg.start_soon(RunCommand().run, {"command": command}, ctx)
        with anyio.fail_after(10):
            await seen.wait()
        assert len(alive(m)) >= 2  # the shell and its two sleeps
        cancelled_at = time.monotonic()
        tg.cancel_scope.cancel()
    stopped_at = time.monotonic()
    # SIGTERM, then SIGKILL runner.KILL_GRACE (0.4 s) later: far sooner than the
    # command would end (a loaded CI machine gets some slack).
    assert stopped_at - cancelled_at < runner.KILL_GRACE + 2.0
    assert gone(m), alive(m)


async def test_background_jobs_do_not_outlive_the_command(tmp_path: Path) -> None:
    m = marker()
    out, _ = await run(tmp_path, {"command": f"sleep {m} > /dev/null 2>&1 & echo left"})
    assert "left" in text_of(out)
    assert gone(m), alive(m)


def test_a_killed_sidecar_leaves_no_orphan(tmp_path: Path) -> None:
    """The process running the command dies by SIGKILL (no cleanup runs at all): the
    watchdog still takes the command's whole group down."""
    m = marker()
    script = textwrap.dedent(
        f"""
        import anyio, os, sys
        from threadline.tools.commands import runner
        async def main():
            await runner.run(["/bin/sh", "-c", "sleep {m} & sleep {m}; echo"],
                             cwd={str(tmp_path)!r}, env=dict(os.environ), timeout=60,
                             on_output=lambda t: None)
        anyio.run(main)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + patience(20)
        while len(alive(m)) < 2:
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        # The sleeps would live ~3000 s: any deadline well short of that still fails
        # when the watchdog does not kill them; the load only delays when it runs.
        deadline = time.monotonic() + patience(10)
        while alive(m):
            assert time.monotonic() < deadline, f"orphans left: {alive(m)}"
            time.sleep(0.05)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


# -- in the client's terminal -------------------------------------------------------------


async def test_in_the_clients_terminal(tmp_path: Path) -> None:
    editor = FakeEditor(terminal=True)
    out, shown = await run(tmp_path, {"command": "echo from-terminal; exit 4"}, editor=editor)
    assert shown == ["<terminal term_1>"]
    assert editor.methods() == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    create = editor.requests[0][1]
    assert create["command"] == "/bin/sh" and create["args"] == ["-c", "echo from-terminal; exit 4"]
    assert create["cwd"] == str(tmp_path.resolve())
    assert text_of(out) == "$ echo from-terminal; exit 4\nfrom-terminal\n\n[exit code 4]"
    assert out.display == [{"type": "terminal", "terminalId": "term_1"}]
    assert out.raw_output["ranIn"] == "terminal"


async def test_client_terminal_interrupt_kills_then_releases(tmp_path: Path) -> None:
    m = marker()
    editor = FakeEditor(terminal=True)
    seen = anyio.Event()
    ctx = make_ctx(tmp_path, editor, progress=lambda _content: seen.set())
    async with anyio.create_task_group() as tg:
        tg.start_soon(RunCommand().run, {"command": f"sleep {m}"}, ctx)
        with anyio.fail_after(10):
            await seen.wait()
        tg.cancel_scope.cancel()
    assert editor.methods()[-2:] == ["terminal/kill", "terminal/release"]
    assert editor.released == ["term_1"]
    assert gone(m), alive(m)


async def test_client_terminal_timeout_kills_and_reports(tmp_path: Path) -> None:
    editor = FakeEditor(terminal=True)
    out, _ = await run(tmp_path, {"command": "echo begun; sleep 30", "timeout": 1}, editor=editor)
    assert out.is_error and "stopped after the 1 s timeout" in text_of(out)
    assert "begun" in text_of(out)
    assert editor.methods()[-3:] == ["terminal/kill", "terminal/output", "terminal/release"]


# -- sandboxed ----------------------------------------------------------------------------


@needs_bwrap
async def test_sandbox_cannot_write_outside_the_roots(tmp_path: Path) -> None:
    realparts.use("bubblewrap")  # named in the run\'s summary line
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    command = (
        f"echo in > inside.txt; echo out > {outside}/escaped.txt; "
        f"echo home > $HOME/.threadline-escape-test; echo tmp > /tmp/t && cat /tmp/t"
    )
    out, _ = await run(ws, {"command": command}, sandboxed=True)
    text = text_of(out)
    assert (ws / "inside.txt").read_text() == "in\n"
    assert not (outside / "escaped.txt").exists()
    assert not (Path.home() / ".threadline-escape-test").exists()
    assert "Read-only file system" in text
    assert "\ntmp\n" in text  # a private /tmp is writable
    assert out.raw_output["ranIn"] == "sandbox"


@needs_bwrap
async def test_sandbox_cannot_reach_a_loopback_server(tmp_path: Path) -> None:
    realparts.use("bubblewrap")  # named in the run\'s summary line
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    probe = (
        f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2);"
        " print('CONNECTED')\""
    )
    try:
        out, _ = await run(tmp_path, {"command": probe}, sandboxed=True)
        assert "\nCONNECTED\n" not in text_of(out)
        assert "Connection refused" in text_of(out) or "unreachable" in text_of(out)
        # The same probe unconfined does connect: the server is really there.
        plain, _ = await run(tmp_path, {"command": probe})
        assert "\nCONNECTED\n" in text_of(plain)
    finally:
        server.close()


@needs_bwrap
async def test_sandbox_still_runs_the_workspaces_tests(tmp_path: Path) -> None:
    realparts.use("bubblewrap")  # named in the run\'s summary line
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"
    out, _ = await run(tmp_path, {"command": command}, sandboxed=True)
    assert "1 passed" in text_of(out), text_of(out)
    assert text_of(out).endswith("[exit code 0]")
    assert not [p for p in (tmp_path).iterdir() if p.name == ".pytest_cache"]
