"""The provider for a GGUF model run by a shared, supervised local server.

Each ``stream`` call: make sure the server runs (:class:`~.launcher.Launcher`), take a
slot in the fair queue (:class:`~.slots.SlotQueue`), check under the record lock that
the server is still ready, then stream through the OpenAI-compatible provider (the
HTTP client is that provider's; this one only supervises) with a
:class:`~.watchdog.Watchdog` watching for progress. Waits are reported as
``StatusNotice`` events, so the client sees "starting the model server…" or
"waiting for the model: 2 ahead" as ``session_info_update`` status.

A server that dies or stalls mid-answer ends the call with ``provider_crashed``; the
turn keeps what streamed (a truncated message, ``partialText`` in the -32011 data) and
the next call uses the restarted server. If it died before any output, the request
is sent again to the restarted server (nothing shown twice); the keeper's restart
limit bounds that.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

from ...settings import data_dir
from ...userconfig import ModelEntry, Secret
from ..base import ChatRequest, ProviderError, ProviderEvent, StatusNotice
from ..configured import ConfiguredProvider
from ..openai_compat import OpenAICompatProvider, OpenAIOptions
from ..policies.failures import OUTPUT_EVENTS
from ..traits import TraitStore, optional_bool, tool_results_option
from . import procfs
from .home import ServerRecord
from .launcher import Launcher, ServerUnavailable
from .slots import NoSlot, SlotQueue
from .spec import ServerSpec
from .status import ServerStatus, describe
from .watchdog import Watchdog

log = logging.getLogger(__name__)

LOOPBACK_PLACEHOLDER = "http://127.0.0.1/v1"
"""The options' base URL until the server's port is known (each port gets its client)."""

DEATH_GRACE = 2.0
"""After a failed stream, how long to look for the server's death before calling the
failure an ordinary one."""


@dataclass(slots=True)
class _Attempt:
    streamed: bool = False
    crash: str | None = None


class ModelServerProvider(ConfiguredProvider[OpenAIOptions]):
    def __init__(self, root: Path, spec: ServerSpec, options: OpenAIOptions) -> None:
        super().__init__(options)
        self.spec = spec
        self.launcher = Launcher(root, spec)
        self._counter = OpenAICompatProvider(options)
        self._clients: dict[tuple[int, str], OpenAICompatProvider] = {}

    def count_tokens(self, request: ChatRequest) -> int:
        return self._counter.count_tokens(request)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            await c.aclose()

    def _client(self, record: ServerRecord) -> OpenAICompatProvider:
        """The HTTP client for the server as ``record`` has it (port and key)."""
        assert record.port is not None
        key = (record.port, record.api_key or "")
        client = self._clients.get(key)
        if client is None:
            client = OpenAICompatProvider(
                replace(
                    self.options,
                    base_url=f"http://127.0.0.1:{record.port}/v1",
                    api_key=Secret(record.api_key) if record.api_key else None,
                )
            )
            self._clients[key] = client
        return client

    async def _drop_stale(self, record: ServerRecord) -> None:
        """Close the clients of servers that are gone (an earlier port or key)."""
        current = (record.port, record.api_key or "")
        for key in [k for k in self._clients if k != current]:
            await self._clients.pop(key).aclose()

    # -- the stream -------------------------------------------------------------------

    async def stream(self, request: ChatRequest) -> AsyncIterator[ProviderEvent]:
        sup = self.spec.supervision
        retries = 0
        while True:
            try:
                async for line in self.launcher.wait_ready():
                    yield StatusNotice(line)
            except ServerUnavailable as exc:
                yield ProviderError(exc.reason, exc.message, None, False)
                return
            queue = SlotQueue(self.launcher.home, self.spec.slots)
            try:
                async for line in queue.wait(sup.slot_wait):
                    yield StatusNotice(line)
            except NoSlot as exc:
                yield ProviderError("no_slot", str(exc), None, True)
                return
            slot = queue.slot
            assert slot is not None
            try:
                record = await self.launcher.current()
                if record is None:
                    continue  # stopped or restarting since: wait for it again
                attempt = _Attempt()
                async for event in self._supervised(record, request, attempt):
                    yield event
                if attempt.crash is None:
                    return
                if attempt.streamed or retries >= sup.max_restarts:
                    yield ProviderError("provider_crashed", attempt.crash, None, True)
                    return
                retries += 1
                yield StatusNotice(f"{attempt.crash}; sending the request again")
            finally:
                slot.release()

    async def _supervised(
        self, record: ServerRecord, request: ChatRequest, attempt: _Attempt
    ) -> AsyncIterator[ProviderEvent]:
        assert record.pid is not None and record.port is not None
        await self._drop_stale(record)
        with Watchdog(record.pid, record.pid_start, self.spec.supervision.stall_timeout) as dog:
            events = self._client(record).stream(request)
            async with aclosing(events):  # type: ignore[type-var]
                async for event in events:
                    dog.progress()
                    if isinstance(event, ProviderError):
                        attempt.crash = await self._crash(record, dog)
                        if attempt.crash is None:
                            yield event
                        return
                    if isinstance(event, OUTPUT_EVENTS):
                        attempt.streamed = True
                    yield event

    async def _crash(self, record: ServerRecord, dog: Watchdog) -> str | None:
        """Why the stream failed, if the server died or was killed as stalled."""
        name = f"the model server ({self.spec.kind}, pid {record.pid})"
        if dog.stalled_for is not None:
            return (
                f"{name} stalled: no output and no CPU progress for {dog.stalled_for:.1f} s; "
                "it was killed and is being restarted"
            )
        with anyio.move_on_after(DEATH_GRACE):
            while True:  # polled: the death of another process has no event to await
                if not procfs.alive(record.pid, record.pid_start):
                    break
                await anyio.sleep(0.05)
        if procfs.alive(record.pid, record.pid_start):
            return None
        how = "died"
        with anyio.move_on_after(1.0):
            while True:
                now = self.launcher.home.read()
                if now.generation != record.generation or now.state != "ready":
                    if now.last_exit and now.state != "failed":
                        how = f"died ({now.last_exit.split(':')[0]})"
                    break
                await anyio.sleep(0.05)
        return f"{name} {how} in the middle of the answer; it is being restarted"

    # -- for people -------------------------------------------------------------------

    def status(self) -> ServerStatus:
        return describe(self.launcher.home, self.spec)

    async def reachable(self, timeout: float = 5.0) -> tuple[bool, str]:
        """Whether the model can be used, without starting anything."""
        s = self.status()
        if self.spec.fingerprint() is None:
            return False, f"model file {self.spec.gguf} not found"
        if s.state == "failed":
            return False, s.detail
        if s.state == "ready":
            return True, f"{self.spec.kind} ready: {s.summary()}"
        if s.state == "stopped":
            return True, f"{self.spec.kind} not running; starts on first use"
        return True, f"{self.spec.kind} {s.state}"


def shared_server_provider(entry: ModelEntry, root: Path | None = None) -> ModelServerProvider:
    """The provider for a ``gguf`` model entry of ``threadline.toml``, on the home's
    shared server (``root``: the Threadline home, ``THREADLINE_HOME`` by default)."""
    server = entry.server
    if server is None:
        raise ValueError(f"model {entry.id!r} names no gguf file")
    window = entry.option("context_window")
    spec = ServerSpec.from_config(server, int(window) if window else None)
    options = OpenAIOptions(
        model=spec.alias,
        model_id=entry.id,
        base_url=LOOPBACK_PLACEHOLDER,
        api_key=None,
        api_key_env=None,
        context_window=spec.context_window,
        # What the server does with tools is learned as for any OpenAI-compatible one.
        tool_results=tool_results_option(entry.option("tool_results")),
        stream_tools=optional_bool(entry.option("stream_tools")),
        traits=TraitStore.in_home(),
        max_tokens_param=entry.option("max_tokens_param"),
        extra_body=_extra_body(spec, entry.option("extra_body")),
        tokenizer=entry.option("tokenizer"),
        send_reasoning=bool(entry.option("send_reasoning", False)),
        connect_timeout=float(entry.option("connect_timeout", 10.0)),
    )
    return ModelServerProvider(root or data_dir(), spec, options)


def _extra_body(spec: ServerSpec, configured: object) -> dict[str, object]:
    """What every request adds: for llama-server, ``cache_prompt`` (its slot keeps
    the evaluated prompt, and a request goes to the slot whose prompt is most like its
    own, so each of ``slots`` sessions keeps its prefix warm; older builds default to
    off). llama_cpp.server needs nothing: its prompts are kept by the server itself
    (:mod:`.warmserver`)."""
    body: dict[str, object] = {"cache_prompt": True} if spec.kind == "llama-server" else {}
    if isinstance(configured, dict):
        body.update({str(k): v for k, v in configured.items()})  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return body
