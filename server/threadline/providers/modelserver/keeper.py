"""The keeper: one small process per model server that starts, watches and stops it.

``python -m threadline.providers.modelserver.keeper FOLDER --lock-fd N`` is started,
detached, by the first sidecar that needs the server; it inherits that sidecar's hold
on ``keeper.lock`` (fd N) and keeps it for its whole life. It outlives the sidecar
that started it, so the server stays shared when that editor window closes.

* **Ready** only when the server's health endpoint answers (``/v1/models`` for
  llama_cpp.server, ``/health`` for llama-server); one that does not within
  ``ready_timeout`` is killed, and that counts as a crash.
* **Restarts**: a server that exits (crash, or killed by a sidecar that saw it stall)
  is started again at once, on the same port if it is free; at most
  ``max_restarts`` within ``restart_window`` seconds. One more crash and the record
  says ``failed`` with the reason and the server's last log lines; the keeper exits,
  and sidecars report that error until the model file or the config changes.
* **Idle stop**: when no slot is held and no request has used the server for
  ``idle_timeout`` seconds, it is stopped (``SIGTERM``, then ``SIGKILL``) and the
  keeper exits. The check and the decision happen under the record lock; a sidecar
  takes its slot first and checks the state under the same lock, so a request never
  reaches a server that is being stopped.
* The server gets ``PR_SET_PDEATHSIG``: if the keeper is killed, so is the server.

Liveness while a request is in flight is judged by the sidecar streaming it (it sees
the bytes), see :mod:`.provider`; the keeper only learns of a stall as an exit.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Literal

from . import procfs
from .home import ServerHome
from .spec import ServerSpec, SpecError

log = logging.getLogger("threadline.keeper")

POLL = 0.1
TERM_GRACE = 5.0
LOG_ROTATE_BYTES = 4 * 1024 * 1024
PR_SET_PDEATHSIG = 1

Outcome = Literal["exited", "not_ready", "idle", "stop"]


def free_port(preferred: int | None = None) -> int:
    """``preferred`` if it can be bound on loopback, else a fresh ephemeral port."""
    for candidate in (preferred, 0):
        if candidate is None:
            continue
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise OSError("no free loopback port")


def _die_with_parent() -> None:
    """Runs in the server's child process before exec: die when the keeper dies."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class Keeper:
    def __init__(self, home: ServerHome, spec: ServerSpec) -> None:
        self.home = home
        self.spec = spec
        self.stop_requested = False
        self.log_offset = 0
        self.api_key = ""

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop_requested = True

    # -- the loop ---------------------------------------------------------------------

    def run(self) -> int:
        sup = self.spec.supervision
        self.api_key = secrets.token_urlsafe(24)
        record = self.home.update(
            state="starting",
            api_key=self.api_key,
            keeper_pid=os.getpid(),
            generation=0,
            restarts=0,
            crashes=[],
            error=None,
            last_exit=None,
            fingerprint=self.spec.fingerprint(),
            model=self.spec.gguf,
            kind=self.spec.kind,
            slots=self.spec.slots,
        )
        port: int | None = None
        crashes: list[float] = []
        restarts = 0
        while True:
            try:
                port = free_port(port)
                proc = self.start(port, record.generation + 1)
            except (OSError, SpecError) as exc:
                self.home.update(state="failed", error=f"cannot start the model server: {exc}")
                return 1
            outcome = self.watch(proc, port)
            if outcome in ("idle", "stop") or self.stop_requested:
                self.terminate(proc)
                self.home.update(state="stopped", pid=None, pid_start=None, port=None)
                log.info("stopped (%s)", outcome)
                return 0
            if outcome == "not_ready":
                self.terminate(proc)
                why = f"its health endpoint did not answer within {sup.ready_timeout:g} s"
            else:
                why = describe_exit(proc.returncode)
            tail = self.home.log_tail(since=self.log_offset)
            last_exit = f"{why}: {tail}" if tail else why
            log.warning("server pid %d ended: %s", proc.pid, last_exit)
            now = time.time()
            crashes = [t for t in crashes if now - t < sup.restart_window]
            if len(crashes) >= sup.max_restarts:
                error = (
                    f"the {self.spec.kind} server for {self.spec.path.name} failed "
                    f"{len(crashes) + 1} times within {sup.restart_window:g} s "
                    f"(last: {last_exit}); it stays stopped until threadline.toml or the "
                    "model file changes"
                )
                self.home.update(
                    state="failed", error=error, last_exit=last_exit, pid=None, port=None
                )
                log.error("%s", error)
                return 1
            crashes.append(now)
            restarts += 1
            record = self.home.update(
                state="restarting",
                last_exit=last_exit,
                restarts=restarts,
                crashes=crashes,
                pid=None,
            )
            self.pause(min(0.25 * len(crashes), 2.0))

    def start(self, port: int, generation: int) -> subprocess.Popen[bytes]:
        argv = self.spec.command(port)
        if self.home.server_log.exists() and self.home.server_log.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(self.home.server_log, self.home.server_log.with_suffix(".log.1"))
        out = self.home.server_log.open("ab")
        try:
            self.log_offset = out.tell()
            out.write(f"=== generation {generation}: {' '.join(argv)}\n".encode())
            out.flush()
            self.log_offset = out.tell()
            proc = subprocess.Popen(
                argv,
                env=self.spec.environment(self.api_key, os.environ),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.home.folder,
                preexec_fn=_die_with_parent,  # safe: the keeper has a single thread
            )
        finally:
            out.close()
        st = procfs.stat(proc.pid)
        self.home.update(
            state="starting",
            pid=proc.pid,
            pid_start=st.start if st else None,
            port=port,
            generation=generation,
        )
        log.info("generation %d: pid %d on port %d", generation, proc.pid, port)
        return proc

    def watch(self, proc: subprocess.Popen[bytes], port: int) -> Outcome:
        sup = self.spec.supervision
        ready_by = time.monotonic() + sup.ready_timeout
        ready = False
        next_idle_check = 0.0
        url = f"http://127.0.0.1:{port}{self.spec.health_path}"
        while True:
            if self.stop_requested:
                return "stop"
            if proc.poll() is not None:
                return "exited"
            now = time.monotonic()
            if not ready:
                if healthy(url, self.api_key):
                    ready = True
                    self.home.touch_used()  # the idle clock starts at ready
                    self.home.update(state="ready", error=None)
                    log.info("pid %d ready", proc.pid)
                elif now > ready_by:
                    return "not_ready"
            elif now >= next_idle_check:
                next_idle_check = now + min(1.0, max(sup.idle_timeout / 4, POLL))
                if self.idle():
                    return "idle"
            time.sleep(POLL)

    def idle(self) -> bool:
        """Unused past the idle timeout? Decided, and marked, under the record lock."""
        with self.home.lock():
            if self.home.slots_busy(self.spec.slots):
                return False
            if self.home.idle_for() < self.spec.supervision.idle_timeout:
                return False
            record = self.home.read()
            record.state = "stopping"
            self.home.write(record)
            return True

    def terminate(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(TERM_GRACE)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.wait()

    def pause(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        while not self.stop_requested and time.monotonic() < until:
            time.sleep(POLL)


def healthy(url: str, api_key: str) -> bool:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as reply:
            return bool(reply.status == 200)
    except (OSError, urllib.error.URLError, ValueError):
        return False


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="threadline-keeper", description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--lock-fd", type=int, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr
    )
    home = ServerHome(args.folder)
    spec = ServerSpec.from_json(home.spec_path.read_text())
    keeper = Keeper(home, spec)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, keeper.request_stop)
    try:
        return keeper.run()
    finally:
        os.close(args.lock_fd)


if __name__ == "__main__":
    raise SystemExit(main())
