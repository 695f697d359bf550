"""``threadline serve`` after ``initialize``: wire the store, engine and connection, run.

:mod:`.boot` starts the process and may have answered ``initialize`` already."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import sys
from collections.abc import Callable
from typing import BinaryIO

import anyio
from pydantic import BaseModel

from threadline_protocol.methods import InitializeParams

from .. import __version__
from ..engine.engine import Engine
from ..engine.workspace import Workspaces
from ..providers.registry import ProviderRegistry
from ..settings import Settings
from ..store.base import StoreError
from ..store.factory import describe_store, open_store
from ..userconfig import ConfigError, store_url
from .outbox import Outbox
from .prelude import Prelude
from .routes import ROUTES, unbuilt_models
from .server import ThreadlineServer

log = logging.getLogger(__name__)

SHUTDOWN_GRACE = 1.5
"""Seconds running turns get to record their partial state when the client leaves."""


async def _run(server: ThreadlineServer, prelude: Prelude) -> None:
    loop = asyncio.get_running_loop()
    # Ctrl-C in the editor's terminal reaches the whole process group: the sidecar
    # ignores it (its client interrupts turns); SIGTERM stops it cleanly.
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        loop.add_signal_handler(signal.SIGTERM, server.stopped.set)
    server.start_reader(loop, prelude.decoder, prelude.frames, eof=prelude.eof)
    loop.call_soon(build_when_idle, loop, unbuilt_models(), server.idle)
    await server.stopped.wait()
    server.shutting_down = True
    with anyio.move_on_after(SHUTDOWN_GRACE):
        await server.engine.shutdown()
        await server.cancel_all_requests()


IDLE_AGAIN = 0.05
"""Seconds before start-up work on the loop looks again whether the connection is idle."""


def build_when_idle(
    loop: asyncio.AbstractEventLoop, models: list[type[BaseModel]], idle: Callable[[], bool]
) -> None:
    """Build the first of ``models`` (`routes.OPENING`'s) when the connection is idle
    (`ThreadlineServer.idle`), then the rest one per turn of the loop: a request that
    arrives meanwhile waits for one model at most (a few milliseconds), and a replay
    being written to the client is not slowed by it (the writer needs the
    interpreter too). Start-up work a client that sends its first request at once
    partly still waits for; one that opens a session later (an editor's own
    start-up) does not."""
    if not models:
        return
    if not idle():
        loop.call_later(IDLE_AGAIN, build_when_idle, loop, models, idle)
        return
    model = models.pop(0)
    if not model.__pydantic_complete__:
        model.model_rebuild(force=True)
    loop.call_soon(build_when_idle, loop, models, idle)


def run(
    settings: Settings,
    outbox: Outbox,
    providers: ProviderRegistry,
    stdin: BinaryIO,
    prelude: Prelude,
) -> int:
    """The full server, taking over from :mod:`.boot` (which may have answered
    ``initialize`` already) with what it read."""
    try:
        secret = store_url()
        url = secret.reveal() if secret else None
        store = open_store(settings.db_path, url)
    except (StoreError, ConfigError) as exc:
        # One line an editor can show as is; it never carries the URL's password.
        print(f"threadline: {exc}", file=sys.stderr)
        outbox.close()
        return 2
    workspaces = Workspaces(settings.home)
    server = ThreadlineServer(
        lambda link: Engine(store, providers, link, workspaces), ROUTES, stdin, outbox
    )
    if prelude.initialized is not None:
        server.note("initialize", InitializeParams.model_validate(prelude.initialized))
    recovered = server.engine.recover()
    # What is loaded by now lives as long as the process: kept out of the collector's
    # full passes, which a long session's load would otherwise set off (docs/benchmarks.md).
    gc.freeze()
    log.info(
        "threadline %s serving (data: %s, sessions: %s, recovered %d interrupted turns)",
        __version__,
        settings.home,
        describe_store(settings.db_path, url),
        recovered,
    )
    try:
        asyncio.run(_run(server, prelude))
    finally:
        store.close()
        server.outbox.close()
        log.info("threadline stopped")
    return 0
