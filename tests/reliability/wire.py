"""A sidecar driven with raw bytes from synchronous code, for hypothesis.

Hypothesis runs examples synchronously, and spawning a sidecar per example would
cost more than a second each; so one ``threadline serve`` process lives for the whole
test and examples talk to it through this class. A reader thread parses whatever the
server writes (either framing) into a queue; a second thread drains stderr so the
server never blocks on it. Nothing here interprets the protocol beyond framing.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.support import SERVER_COMMAND, sidecar_env

Framing = str  # "headers" | "lines"


class ServerGone(Exception):
    """The sidecar closed its stdout (it died or exited)."""


def frame(body: bytes, framing: Framing) -> bytes:
    if framing == "lines":
        return body + b"\n"
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class WireSidecar:
    def __init__(self, home: Path, env: dict[str, str] | None = None) -> None:
        self.home = home
        full_env = sidecar_env(home)
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            SERVER_COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
        )
        self.inbox: queue.Queue[dict[str, Any] | BaseException] = queue.Queue()
        self.stderr = bytearray()
        self.bad_output: list[bytes] = []
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._drain_stderr, daemon=True),
        ]
        for t in self._threads:
            t.start()

    # -- output ---------------------------------------------------------------------

    def _read_stdout(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                line = out.readline()
                if not line:
                    break
                if line.lstrip().startswith(b"{"):
                    body = line
                elif line.lower().startswith(b"content-length"):
                    length = int(line.split(b":")[1])
                    while out.readline().strip():
                        pass
                    body = out.read(length)
                elif not line.strip():
                    continue
                else:
                    self.bad_output.append(line)
                    continue
                try:
                    self.inbox.put(json.loads(body))
                except ValueError:
                    self.bad_output.append(body)
        except (OSError, ValueError) as exc:
            self.inbox.put(exc)
        self.inbox.put(ServerGone(f"sidecar stdout closed (exit code {self.proc.poll()})"))

    def _drain_stderr(self) -> None:
        err = self.proc.stderr
        assert err is not None
        while chunk := err.read1(65536):
            self.stderr += chunk
            if len(self.stderr) > 4 << 20:  # keep the tail only
                del self.stderr[: len(self.stderr) - (2 << 20)]

    def next(self, timeout: float) -> dict[str, Any]:
        """The next message the server wrote; raises TimeoutError or ServerGone."""
        try:
            item = self.inbox.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no message from the sidecar within {timeout} s") from None
        if isinstance(item, BaseException):
            self.inbox.put(item)  # keep reporting it
            raise ServerGone(str(item)) from item
        return item

    # -- input ----------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(data)
        stdin.flush()

    def send(self, message: Any, framing: Framing) -> None:
        self.write(frame(json.dumps(message).encode(), framing))

    def request(
        self, msg_id: Any, method: str, params: Any, framing: Framing, timeout: float = 30
    ) -> dict[str, Any]:
        """Send one request and return its response (messages before it are dropped)."""
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}, framing)
        deadline = time.monotonic() + timeout
        while True:
            msg = self.next(max(0.01, deadline - time.monotonic()))
            if "method" not in msg and msg.get("id") == msg_id:
                return msg

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_kib(self) -> int:
        return rss_kib(self.proc.pid)

    def close(self, timeout: float = 10) -> int | None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)


def rss_kib(pid: int) -> int:
    """Resident set size of a process, from ``/proc/<pid>/status`` (KiB)."""
    status = Path(f"/proc/{pid}/status").read_text()
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise ValueError(f"no VmRSS for pid {pid}")


def cpu_ticks(pid: int) -> int:
    """User + system CPU time of a process so far (clock ticks), from ``/proc/<pid>/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def pid_alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
