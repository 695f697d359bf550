"""A fork server for sidecars: ``threadline serve`` children in milliseconds.

A sidecar spends about 1.5 s importing its libraries before it answers; the crash
suite needs hundreds of restarts. This process imports the sidecar once, then for each
request forks a child that runs exactly what ``threadline serve`` runs
(``threadline.rpc.boot.serve()``) on the pipes the test passed over a Unix socket
(``SCM_RIGHTS``). The child is a real, separate process the test can SIGKILL; only the
imports are shared, not state (the zygote never opens a store or starts a loop).

Run by :class:`Zygote` (below) as ``python -m tests.reliability.zygote <socket fd>``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.reliability.peer import Peer
from tests.support import sidecar_env


def _serve_forever(sock: socket.socket) -> None:
    import threadline.engine.engine
    import threadline.providers.scripted
    import threadline.rpc.boot
    import threadline.rpc.routes
    import threadline.rpc.serve
    import threadline.store.postgres
    import threadline.tools.workspace

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    while True:
        data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 20, 3)
        if not data:
            return
        request: dict[str, Any] = json.loads(data)
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                sock.close()
                for target, fd in enumerate(fds):
                    os.dup2(fd, target)
                    os.close(fd)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.environ.clear()
                os.environ.update(request["env"])
                code = threadline.rpc.boot.serve()
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps({"pid": pid}).encode())


class Zygote:
    """The test side: spawn children and get back their pid and pipes."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        repo = Path(__file__).resolve().parents[2]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.zygote", str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            cwd=repo,
        )
        theirs.close()

    async def spawn(self, home: Path, stderr_path: Path) -> tuple[int, int, int]:
        """A new sidecar on ``home``: (pid, fd to write its stdin, fd to read its stdout)."""
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        env = sidecar_env(home)
        payload = json.dumps({"env": env}).encode()
        try:
            await asyncio.to_thread(socket.send_fds, self._sock, [payload], [in_r, out_w, err])
            answer = await asyncio.wait_for(asyncio.to_thread(self._sock.recv, 4096), 10)
        finally:
            for fd in (in_r, out_w, err):
                os.close(fd)
        return int(json.loads(answer)["pid"]), in_w, out_r

    async def peer(self, home: Path, stderr_path: Path) -> tuple[int, Peer]:
        """A new sidecar with a started client on it (not yet initialized)."""
        pid, write_fd, read_fd = await self.spawn(home, stderr_path)
        peer = Peer(write_fd, read_fd)
        await peer.start()
        return pid, peer

    def close(self) -> None:
        self._sock.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


if __name__ == "__main__":
    _serve_forever(socket.socket(fileno=int(sys.argv[1])))
