"""threadline.nvim in a real terminal: Neovim runs in tmux and gets its keys as a user
types them (``:Threadline new``, ``<CR>`` and a prompt, ``:Threadline fork``, ``<C-w>p``,
``<C-c>``); the screen is read with ``capture-pane``, and at the end each chat buffer's
text is compared with its own session's stored history.

The scripted model echoes the prompt, waits 6 s and ends with `(end)`: the first turn
finishes, the second is interrupted while it waits.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import realparts
from tests.clients.stored import history, stored_sessions, text_of
from tests.support import scripted

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
MODEL = scripted([{"echo": True}, {"sleep": 6}, {"text": " (end)"}])


pytestmark = pytest.mark.realpart("tmux", "neovim")


class Tmux:
    """One tmux server of our own (its own socket), one window running Neovim."""

    def __init__(self, socket: str, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.socket = socket
        exports = " ".join(f"{k}={_quote(v)}" for k, v in env.items())
        shell = f"cd {_quote(str(cwd))} && env {exports} " + " ".join(_quote(c) for c in command)
        self._tmux("new-session", "-d", "-x", "200", "-y", "50", "-s", "nvim", shell)

    def _tmux(self, *args: str) -> str:
        out = subprocess.run(
            [str(realparts.use("tmux")), "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return out.stdout

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "nvim", *keys)

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "nvim", "-l", text)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "nvim")

    def wait_for(
        self, pattern: str, timeout: float = 30, explain: Callable[[], str] | None = None
    ) -> str:
        """The screen once ``pattern`` is on it; ``explain`` adds what else a failure
        should show (Neovim's messages, the sidecar's log)."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            if time.monotonic() > deadline:
                more = explain() if explain is not None else ""
                raise AssertionError(
                    f"{pattern!r} not on screen within {timeout} s:\n{screen}{more}"
                )
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run(
            [str(realparts.use("tmux")), "-L", self.socket, "kill-server"],
            capture_output=True,
            timeout=30,
        )


def _quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


@pytest.fixture
def tmux_sessions() -> Iterator[list[Tmux]]:
    opened: list[Tmux] = []
    yield opened
    for t in opened:
        t.close()


def diagnose(tmux: Tmux, home: Path) -> Callable[[], str]:
    """What a failed wait shows besides the screen: `:messages` (a plugin error is
    reported there) and the end of the sidecar's log."""

    def explain() -> str:
        tmux.keys("Escape")
        tmux.type(":messages")
        tmux.keys("Enter")
        time.sleep(0.5)
        messages = tmux.screen()
        logs = sorted(home.rglob("*.log"))
        tail = "".join(p.read_text(errors="replace")[-4000:] for p in logs)
        stored = {
            sid: [words(text_of(m)) for m in history(home, sid)] for sid in stored_sessions(home)
        }
        return f"\n--- :messages\n{messages}\n--- sidecar log\n{tail}\n--- stored\n{stored}"

    return explain


def words(text: str) -> str:
    return " ".join(text.split())


INIT = """
vim.opt.runtimepath:prepend({plugin})
vim.opt.swapfile = false
vim.cmd('runtime plugin/threadline.lua')
require('threadline').setup({{
  cmd = {cmd},
  env = {{ THREADLINE_HOME = {home}, THREADLINE_LOG_LEVEL = 'WARNING' }},
  cwd = {home},
  model = {model},
  open = 'vsplit',
  reuse_window = false,
}})
-- For the test's last step: every chat buffer's text, by session, into one file.
function DumpChats()
  local out = {{}}
  for sid, c in pairs(require('threadline.chat').all()) do
    out[sid] = table.concat(vim.api.nvim_buf_get_lines(c.buf, 0, -1, true), '\\n')
  end
  vim.fn.writefile({{ vim.json.encode(out) }}, {dump})
end
"""


def lua(value: Any) -> str:
    if isinstance(value, list):
        return "{ " + ", ".join(lua(v) for v in value) + " }"
    return json.dumps(str(value))


def read_when_written(path: Path, timeout: float = 20) -> Any:
    """The JSON Neovim writes to `path`, once it is whole: `writefile` creates the file
    before it writes, so a reader that only waits for the file can find it empty."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.timeout(180)
def test_new_ask_fork_ask_in_the_first_window_interrupt(
    tmux_sessions: list[Tmux], home: Path, tmp_path: Path
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    dump = tmp_path / "chats.json"
    init = tmp_path / "init.lua"
    init.write_text(
        INIT.format(
            plugin=lua(PLUGIN),
            cmd=lua([str(REPO / ".venv" / "bin" / "python"), "-m", "threadline", "serve"]),
            home=lua(home),
            model=lua(MODEL),
            dump=lua(dump),
        )
    )
    scratch = tmp_path / "xdg"
    env = {
        "TERM": "xterm-256color",
        "XDG_STATE_HOME": str(scratch / "state"),
        "XDG_DATA_HOME": str(scratch / "data"),
        "XDG_CONFIG_HOME": str(scratch / "config"),
        "XDG_CACHE_HOME": str(scratch / "cache"),
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(tmp_path)),
    }
    nvim = str(realparts.use("neovim"))
    tmux = Tmux(
        f"threadline-test-{os.getpid()}-{id(tmp_path)}", [nvim, "-u", str(init)], env, tmp_path
    )
    tmux_sessions.append(tmux)
    tmux.wait_for(r"~")  # Neovim is up

    # new → ask: the answer streams into the new chat window.
    tmux.type(":Threadline new")
    tmux.keys("Enter")
    tmux.wait_for(r"threadline://sess_")
    tmux.keys("Enter")  # <CR> in the chat buffer
    tmux.wait_for(r"Ask:")
    tmux.type("first question")
    tmux.keys("Enter")
    tmux.wait_for(r"first question\s+\(end\)")

    # fork: a second window with the branch.
    tmux.type(":Threadline fork")
    tmux.keys("Enter")
    tmux.wait_for(r"\[forked from “first question”\]")  # the parent's title, no raw ids

    # ask in the first window, then interrupt it there.
    tmux.keys("C-w", "p")
    tmux.keys("Enter")
    tmux.wait_for(r"Ask:")
    tmux.type("second question")
    tmux.keys("Enter")
    # The echo streaming back as the answer: the turn runs. (The answer's first line
    # carries its message id; the prompt's line does not, nor does the command line,
    # which still shows `Ask: second question` — a pattern that counted that line
    # sent <C-c> before the prompt had gone out, and the turn ran to its end.)
    tmux.wait_for(r"second question\s+msg_")
    tmux.keys("C-c")
    screen = tmux.wait_for(r"\[interrupted\]", explain=diagnose(tmux, home))
    assert not re.search(r"second question\s+\(end\)", screen)

    tmux.type(":lua DumpChats()")
    tmux.keys("Enter")
    chats: dict[str, str] = read_when_written(dump)
    assert len(chats) == 2
    first = next(sid for sid, text in chats.items() if "[forked from" not in text)
    fork = next(sid for sid in chats if sid != first)
    assert "[forked from “first question”]" in chats[fork]
    assert first not in chats[fork]

    # Each buffer holds its own session's text, and only that.
    assert "first question (end)" in words(chats[first])
    assert "second question" in chats[first] and "_[interrupted]_" in chats[first]
    assert "first question (end)" in words(chats[fork])
    assert "second question" not in chats[fork]
    first_history = history(home, first)
    fork_history = history(home, fork)
    assert [words(text_of(m)) for m in first_history] == [
        "first question",
        "first question (end)",
        "second question",
        "second question",
    ]
    assert first_history[-1]["truncated"] is True
    assert [words(text_of(m)) for m in fork_history] == ["first question", "first question (end)"]
    for messages, sid in ((first_history, first), (fork_history, fork)):
        for m in messages:
            assert text_of(m) in chats[sid]

    tmux.type(":qa!")
    tmux.keys("Enter")
