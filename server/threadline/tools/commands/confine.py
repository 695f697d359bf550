"""Confining a command the agent runs: bubblewrap (``bwrap``, Debian's ``bubblewrap``).

A sandboxed command sees the whole file system read-only, except the workspace roots
(read-write, at their own paths) and a private ``/tmp`` (new files go there; what the
host keeps in ``/tmp`` is shown read-only); it has no network at all, not
even the host's loopback (a new network namespace), unless the session allows it; it
runs in its own PID namespace, so when it ends (or the sidecar dies:
``--die-with-parent``) every process it started ends with it.

Why bubblewrap rather than Landlock: Landlock (Linux 5.13+) confines writes without a
helper binary, but its network rules (ABI 4, Linux 6.7+) cover only TCP bind and
connect: UDP, Unix sockets and raw sockets stay open, and it gives no way to take a
whole process tree down. A network namespace closes every protocol at once, the PID
namespace guarantees no orphan, and both kernels and distributions have shipped
``bwrap`` (Flatpak's sandbox) for years. Where ``bwrap`` is missing or cannot create
namespaces (user namespaces disabled), :func:`available` says so and the engine asks
before every command instead of running it unasked.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence

BWRAP = "bwrap"


@functools.cache
def bwrap_path() -> str | None:
    """Where a working ``bwrap`` is; None when missing or unable to make namespaces
    here (tried once per process with the very flags a command gets)."""
    path = shutil.which(BWRAP)
    if path is None:
        return None
    try:
        probe = subprocess.run(
            [path, *_base_args(network=False), "--", "/bin/true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if probe.returncode == 0 else None


def available() -> bool:
    return bwrap_path() is not None


def _base_args(*, network: bool) -> list[str]:
    args = [
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--unshare-pid",
        "--unshare-ipc",
        "--die-with-parent",
        "--new-session",
    ]  # fmt: skip
    if not network:
        args.append("--unshare-net")
    return args


def confined(
    argv: Sequence[str], *, roots: Sequence[str], cwd: str, network: bool = False
) -> list[str]:
    """``argv`` run inside the sandbox: writable ``roots`` (symlinks resolved) over a
    read-only system, a private ``/tmp``, no network unless ``network``."""
    path = bwrap_path()
    if path is None:
        raise RuntimeError("bubblewrap (bwrap) is not available")
    args = [path, *_base_args(network=network), *_host_tmp()]
    for root in dict.fromkeys(os.path.realpath(r) for r in roots):
        args += ["--bind", root, root]
    args += ["--setenv", "TMPDIR", "/tmp", "--chdir", cwd, "--", *argv]
    return args


HOST_TMP_ENTRIES = 256
"""How many of the host's ``/tmp`` entries are shown (read-only) in the private one."""


def _host_tmp() -> list[str]:
    """The host's ``/tmp`` entries bound read-only into the private ``/tmp``: a fresh
    tmpfs alone hid everything there, so a virtual environment or a tool that lives
    under ``/tmp`` was "not found" inside the sandbox."""
    try:
        names = sorted(os.listdir("/tmp"))[:HOST_TMP_ENTRIES]
    except OSError:
        return []
    args: list[str] = []
    for name in names:
        path = os.path.join("/tmp", name)
        args += ["--ro-bind-try", path, path]
    return args
