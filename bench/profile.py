"""``python -m bench.profile SCENARIO``: why a figure is what it is.

Runs one scenario against a real ``threadline serve`` with py-spy attached to the
server (all threads, by function, idle stacks left out) and prints where the
samples fall: by *self* time (the function on top of the stack) and *inclusive*
time (the function anywhere on the stack). ``imports`` instead lists what
``threadline serve`` imports before it can answer ``initialize`` (``-X importtime``).

Scenarios: imports, stream, concurrency, history, load, localmodel, delegate. Needs
``pip install py-spy`` (attaching needs ptrace rights over the server: same user).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from .figures import delegate
from .figures.concurrency import all_at_once
from .fixtures import fill
from .servers import INITIALIZE, THREADLINE, new_session, prompt_params, spawn
from .streaming import stream_once
from .wire import Connection

_FRAME_LINE = re.compile(r":\d+\)$")


BOOT_MODULE = "threadline.rpc.boot"
"""What ``threadline serve`` imports to answer ``initialize``; the rest comes after."""


def imports(top: int) -> None:
    """Cumulative import time of ``threadline serve`` before and after it answers
    ``initialize``, biggest first."""
    home = tempfile.mkdtemp(prefix="threadline-bench-")
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})
    frame = f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
    try:
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "threadline", "serve"],
            input=frame,
            capture_output=True,
            env={**os.environ, "THREADLINE_HOME": home},
            timeout=120,
            check=False,
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    before: list[tuple[int, int, str]] = []
    after: list[tuple[int, int, str]] = []
    rows = before
    for line in out.stderr.decode(errors="replace").splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        own, cumulative, name = line.split(":", 1)[1].split("|", 2)
        if own.strip().isdigit():
            rows.append((int(cumulative), int(own), name.rstrip()))
            if name.strip() == BOOT_MODULE and not name[1:].startswith(" "):
                rows = after  # boot answers initialize, then imports the rest
    for title, part in (("before `initialize` is answered", before), ("after it", after)):
        total = sum(c for c, _, n in part if not n[1:].startswith(" "))
        print(f"top-level imports {title}: {total / 1000:.0f} ms")
        print(f"{'cumulative':>11} {'self':>9}  module (indent = imported by the line above)")
        for cumulative, own, name in sorted(part, reverse=True)[:top]:
            print(f"{cumulative / 1000:8.1f} ms {own / 1000:6.1f} ms  {name}")
        print()


class Spy:
    """py-spy recording one process until stopped."""

    def __init__(self, pid: int, out: Path, rate: int, native: bool, idle: bool = False) -> None:
        exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        argv = [exe, "record", "--pid", str(pid), "--format", "raw", "--output", str(out)]
        # --nonblocking: stopping the server to sample interrupts its blocking pipe
        # writes, and the outbox does not retry a short write (see docs/benchmarks.md).
        argv += ["--rate", str(rate), "--function", "--threads", "--nonblocking"]
        if native:
            argv.append("--native")
        if idle:
            argv.append("--idle")
        self.out = out
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.0)  # let it attach

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def summarize(raw: Path, top: int) -> None:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_FRAME_LINE.sub(")", f) for f in stack.split(";")]
        threads[frames[0]] += count
        frames = frames[1:]
        total += count
        if frames:
            own[frames[-1]] += count
        for f in set(frames):
            inclusive[f] += count
    if not total:
        print("no samples (did py-spy attach?)")
        return
    print(f"{total} samples")
    print("\nby thread:")
    for name, n in threads.most_common():
        print(f"  {100 * n / total:5.1f}%  {name}")
    print("\nself (top of stack):")
    for name, n in own.most_common(top):
        print(f"  {100 * n / total:5.1f}%  {name}")
    print("\ninclusive (anywhere on the stack):")
    for name, n in inclusive.most_common(top):
        print(f"  {100 * n / total:5.1f}%  {name}")


def _stream(conn: Connection, home: Path) -> None:
    for _ in range(3):
        stream_once(conn, 100_000)


def _concurrency(conn: Connection, home: Path) -> None:
    all_at_once(conn, 100, 20_000)


def _history(conn: Connection, home: Path) -> None:
    sid = conn.call("session/list", {})["sessions"][0]["sessionId"]
    for _ in range(10):
        conn.call("session/history", {"sessionId": sid}, timeout=600)


def _load(conn: Connection, home: Path) -> None:
    sid = conn.call("session/list", {})["sessions"][0]["sessionId"]
    for _ in range(5):
        conn.call("session/load", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []}, 600)


def _localmodel(conn: Connection, home: Path) -> None:
    for _ in range(3):
        sid = new_session(conn, maxTokens=128, temperature=0.0, builtinTools=False)
        conn.call("session/prompt", prompt_params(sid, "Write a short poem about the sea."), 600)


def _delegate_ready(conn: Connection, home: Path) -> None:
    """The parent's model set and its transcript loaded (not profiled)."""
    sid = conn.call("session/list", {})["sessions"][0]["sessionId"]
    record = home / "child-requests.jsonl"
    child = delegate.child_model(home, delegate.REAL_WINDOW)
    delegate.set_model(conn, sid, delegate.parent_model(child, record, delegate.REAL_WINDOW))
    conn.call("session/history", {"sessionId": sid}, timeout=600)


def _delegate(conn: Connection, home: Path) -> None:
    """Five ``delegate`` calls (fork context) of a compacted 100,000-message parent."""
    sid = conn.call("session/list", {})["sessions"][0]["sessionId"]
    for _ in range(5):
        delegate.delegated(conn, sid, home / "child-requests.jsonl")


SCENARIOS: dict[str, tuple[Callable[[Connection, Path], None], int]] = {
    "stream": (_stream, 0),
    "concurrency": (_concurrency, 0),
    "history": (_history, 10_000),
    "load": (_load, 10_000),
    "localmodel": (_localmodel, 0),
    "delegate": (_delegate, 100_000),
}
READY: dict[str, Callable[[Connection, Path], None]] = {"delegate": _delegate_ready}
"""What a scenario needs done before the profile starts."""
COMPACTED: dict[str, int] = {"delegate": delegate.KEPT}
"""Scenarios whose session ends with a compaction (messages left after it)."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    p.add_argument("scenario", choices=["imports", *SCENARIOS])
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    p.add_argument("--native", action="store_true", help="include C frames (llama.cpp, sqlite)")
    p.add_argument(
        "--idle", action="store_true", help="include waiting stacks (wall time, not CPU)"
    )
    p.add_argument("--raw", type=Path, help="keep py-spy's raw collapsed stacks here")
    args = p.parse_args(argv)
    if args.scenario == "imports":
        imports(args.top)
        return 0
    scenario, messages = SCENARIOS[args.scenario]
    home = Path(tempfile.mkdtemp(prefix="threadline-bench-"))
    raw = args.raw or home / "profile.txt"
    try:
        if messages:
            fill(home, [messages], compacted=COMPACTED.get(args.scenario))
        conn = spawn(THREADLINE, home)
        try:
            if args.scenario == "localmodel":
                _localmodel_warmup(conn)
            if args.scenario in READY:
                READY[args.scenario](conn, home)
            spy = Spy(conn.pid, raw, args.rate, args.native, args.idle)
            try:
                scenario(conn, home)
            finally:
                spy.stop()
        finally:
            conn.close()
        summarize(raw, args.top)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


def _localmodel_warmup(conn: Connection) -> None:
    sid = new_session(conn, maxTokens=8, temperature=0.0, builtinTools=False)
    conn.call("session/prompt", prompt_params(sid, "Write a short poem about the sea."), 600)


if __name__ == "__main__":
    raise SystemExit(main())
