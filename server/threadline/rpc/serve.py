"""``threadline serve``: wire the store, providers, engine and connection, then run."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from typing import BinaryIO

import anyio

from .. import __version__
from ..engine.engine import Engine
from ..logs import setup_logging
from ..providers.registry import ProviderRegistry
from ..settings import HomeUnusable, Settings
from ..store.base import StoreError
from ..store.factory import describe_store, open_store
from ..userconfig import ConfigError, store_url
from .handlers import HANDLERS, NOTIFICATIONS
from .server import ThreadlineServer

log = logging.getLogger(__name__)

SHUTDOWN_GRACE = 1.5
"""Seconds running turns get to record their partial state when the client leaves."""


def protect_stdout() -> BinaryIO:
    """Keep fd 1 for the protocol only: anything else that writes to stdout (a C
    library, a stray print) is sent to stderr instead."""
    proto = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return open(proto, "wb", buffering=0)


async def _run(server: ThreadlineServer) -> None:
    loop = asyncio.get_running_loop()
    # Ctrl-C in the editor's terminal reaches the whole process group: the sidecar
    # ignores it (its client interrupts turns); SIGTERM stops it cleanly.
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        loop.add_signal_handler(signal.SIGTERM, server.stopped.set)
    server.start_reader(loop)
    await server.stopped.wait()
    server.shutting_down = True
    with anyio.move_on_after(SHUTDOWN_GRACE):
        await server.engine.shutdown()
        await server.cancel_all_requests()


def serve(stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    settings = Settings.from_env()
    try:
        settings.prepare_home()
        setup_logging(settings)
    except HomeUnusable as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the log file itself (the folder was writable)
        print(
            f"threadline: cannot write the log file {settings.log_path} "
            f"({exc.strerror or exc}); make it writable or set THREADLINE_HOME to "
            "another folder",
            file=sys.stderr,
        )
        return 2
    try:
        secret = store_url()
        url = secret.reveal() if secret else None
        store = open_store(settings.db_path, url)
    except (StoreError, ConfigError) as exc:
        # One line an editor can show as is; it never carries the URL's password.
        print(f"threadline: {exc}", file=sys.stderr)
        return 2
    out = stdout or protect_stdout()
    providers = ProviderRegistry(settings.default_model)
    server = ThreadlineServer(
        lambda link: Engine(store, providers, link),
        HANDLERS,
        NOTIFICATIONS,
        stdin or sys.stdin.buffer,
        out,
    )
    recovered = server.engine.recover()
    log.info(
        "threadline %s serving (data: %s, sessions: %s, recovered %d interrupted turns)",
        __version__,
        settings.home,
        describe_store(settings.db_path, url),
        recovered,
    )
    try:
        asyncio.run(_run(server))
    finally:
        store.close()
        server.outbox.close()
        log.info("threadline stopped")
    return 0
