"""Tools of MCP servers (the ``mcpServers`` of ``session/new``), through the ``mcp`` SDK.

Each server is connected once per session and disconnected when the session closes:
a stdio server is a process started in the session's folder, an ``http`` or ``sse``
one a URL reached with the SDK's streamable HTTP or SSE client, with the entry's
headers on every request (``mcp_config.py`` reads the entries). Its tools join the
session's registry as ``<server>__<tool>`` so names from different servers (and the
built-in and client tools) never collide, and results come back as ACP content
blocks, which are MCP's own.

Lifecycle design. The SDK's ``Client`` is an async context manager whose inside
(``stdio_client``'s task group, the session's dispatcher) uses anyio cancel scopes,
and a cancel scope must be exited by the very task that entered it. The RPC handler
that creates a session and the one that closes it are different, short-lived tasks,
so neither may own a connection. Instead every server gets a *host task* of its own
(:class:`_ServerHost`): it enters the ``Client``, lists the tools, reports ready, then
sleeps until asked to stop, and leaves the ``Client`` itself. Other tasks only *use*
the connection (``call_tool`` is safe from any task: the dispatcher matches responses
to requests) and talk to the host through events. Host tasks are spawned into a
long-lived anyio task group when the owner has one, otherwise as plain asyncio tasks
(the sidecar runs on asyncio). Either way the host, not its caller, does the cleanup,
so a cancelled ``start`` or ``aclose`` never leaves a half-exited scope or a live
server process: the SDK's stdio shutdown (close stdin, wait, terminate the process
group) is shielded and bounded, and a remote server's HTTP session is ended (the
streamable HTTP client's DELETE) before its HTTP client closes.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import re
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from .base import ToolContext, ToolKind, ToolOutcome
from .mcp_config import McpConfigError, McpRemoteSpec, ServerSpec, parse_server

if TYPE_CHECKING:
    import httpx2
    from mcp import Client
    from mcp.types import CallToolResult
    from mcp.types import Tool as RemoteTool

log = logging.getLogger(__name__)

START_TIMEOUT = 30.0
"""Seconds a server gets to spawn, handshake and list its tools."""

STOP_TIMEOUT = 10.0
"""Seconds ``aclose`` waits for hosts; the SDK's own shutdown is bounded below that."""

CALL_TIMEOUT = 120.0
HTTP_TIMEOUT = 30.0
"""Seconds an HTTP request to a remote server gets to connect and send."""
HTTP_READ_TIMEOUT = 300.0
"""Seconds a remote server's event stream may stay silent (SSE servers ping meanwhile)."""
NAME_MAX = 64
"""Model APIs accept tool names of at most 64 characters from ``[A-Za-z0-9_-]``."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_CONTENT_TYPES = {"text", "image", "audio", "resource_link", "resource"}


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """``<server>__<tool>``, made safe for model APIs and unique among ``taken``."""
    base = f"{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"[:NAME_MAX]
    name, n = base, 2
    while name in taken:
        suffix = f"_{n}"
        name = base[: NAME_MAX - len(suffix)] + suffix
        n += 1
    return name


def to_outcome(result: CallToolResult) -> ToolOutcome:
    """MCP content is ACP content: keep the blocks, drop the SDK's transport ``_meta``."""
    blocks: list[dict[str, Any]] = []
    for item in result.content:
        block = item.model_dump(by_alias=True, exclude_none=True, mode="json")
        block.pop("_meta", None)
        if block.get("type") in _CONTENT_TYPES:
            blocks.append(block)
        else:
            blocks.append({"type": "text", "text": json.dumps(block)})
    if not blocks and result.structured_content is not None:
        blocks.append({"type": "text", "text": json.dumps(result.structured_content)})
    if not blocks:
        blocks.append({"type": "text", "text": "(the tool returned no content)"})
    raw = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    raw.pop("_meta", None)
    return ToolOutcome(blocks, is_error=bool(result.is_error), raw_output=raw)


class McpTool:
    """One tool of one MCP server, as the turn loop sees it.

    Tools the server annotates read-only run without asking and in parallel; any
    other tool may change something, so it asks permission and is a barrier."""

    def __init__(
        self, host: _ServerHost, name: str, remote: RemoteTool, timeout: float = CALL_TIMEOUT
    ) -> None:
        self.host = host
        self.name = name
        self.remote_name = remote.name
        self.server = host.spec.name
        read_only = bool(remote.annotations and remote.annotations.read_only_hint)
        about = remote.description or remote.title or remote.name
        self.description = f"{about} (MCP server {self.server!r})"
        self.parameters: dict[str, Any] = dict(remote.input_schema or {"type": "object"})
        self.kind: ToolKind = "read" if read_only else "other"
        self.parallelizable = read_only
        self.needs_permission = not read_only
        self.timeout = timeout
        self._title = (remote.annotations.title if remote.annotations else None) or remote.title

    def title(self, arguments: dict[str, Any]) -> str:
        return f"{self._title or self.remote_name} ({self.server})"

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return []

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        client = self.host.client
        if client is None:
            return ToolOutcome.text(f"MCP server {self.server!r} is not running", is_error=True)
        try:
            result = await client.call_tool(self.remote_name, arguments)
        except Exception as exc:  # protocol errors and a dead connection alike
            return ToolOutcome.text(
                f"MCP server {self.server!r} failed to run {self.remote_name}: {exc}",
                is_error=True,
            )
        return to_outcome(result)


@dataclass(slots=True)
class _ServerHost:
    """The task that owns one server connection from start to stop (see module doc)."""

    spec: ServerSpec
    cwd: str | None
    errlog: TextIO
    client: Client | None = None
    remote_tools: list[RemoteTool] = field(default_factory=list)
    error: str | None = None
    started_in: float | None = None
    ready: anyio.Event = field(default_factory=anyio.Event)
    closed: anyio.Event = field(default_factory=anyio.Event)
    stop: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    refused: str | None = None
    """The last HTTP error status a remote server answered (the SDK's error for it
    says only "Server returned an error response"; a 401 is worth naming)."""

    async def run(self) -> None:
        from mcp import Client
        from mcp.types import Implementation

        began = anyio.current_time()
        info = Implementation(name="threadline", version=_version())
        try:
            with self.scope:
                async with Client(self._transport(), client_info=info) as c:
                    self.remote_tools = await _list_tools(c)
                    self.client = c
                    self.started_in = anyio.current_time() - began
                    self.ready.set()
                    await self.stop.wait()
        except Exception as exc:  # spawn failure, handshake error, crash (groups too)
            refused = f" ({self.refused})" if self.refused else ""
            self.error = self.error or _describe(exc) + refused
            log.warning("MCP server %r stopped with an error: %s", self.spec.name, self.error)
        finally:
            self.client = None
            if not self.ready.is_set() and self.error is None:
                self.error = "stopped before it was ready"
            self.ready.set()
            self.closed.set()

    def request_stop(self) -> None:
        self.stop.set()

    def _transport(self) -> AbstractAsyncContextManager[Any]:
        """The SDK transport the entry names: a process, streamable HTTP or SSE."""
        spec = self.spec
        if isinstance(spec, McpRemoteSpec):
            if spec.transport == "sse":
                from mcp.client.sse import sse_client

                return sse_client(
                    spec.url,
                    headers=spec.header_map(),
                    timeout=HTTP_TIMEOUT,
                    sse_read_timeout=HTTP_READ_TIMEOUT,
                )
            return _streamable_http(spec, self._note_response)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=spec.command, args=list(spec.args), env=dict(spec.env), cwd=self.cwd
        )
        return stdio_client(params, errlog=self.errlog)

    async def _note_response(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            self.refused = f"HTTP {response.status_code} from {response.request.url}"


@asynccontextmanager
async def _streamable_http(
    spec: McpRemoteSpec, on_response: Callable[[httpx2.Response], Awaitable[None]]
) -> AsyncGenerator[Any]:
    """The SDK's streamable HTTP transport over an HTTP client that carries the
    entry's headers (the SDK takes headers only through a client it is given, and
    leaves that client's lifetime to its owner: here, this context)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(HTTP_TIMEOUT, read=HTTP_READ_TIMEOUT)
    hooks = {"response": [on_response]}
    async with (
        httpx2.AsyncClient(headers=spec.header_map(), timeout=timeout, event_hooks=hooks) as http,
        streamable_http_client(spec.url, http_client=http) as streams,
    ):
        yield streams


async def _list_tools(client: Client) -> list[RemoteTool]:
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(100):  # a paginator that never ends cannot hang the start
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, OSError) else text


def _version() -> str:
    try:
        from .. import __version__

        return str(__version__)
    except ImportError:  # pragma: no cover - the package always has one
        return "0"


async def _import_sdk(specs: Iterable[ServerSpec]) -> None:
    """Import the SDK's transports on a worker thread: it takes seconds on a busy
    machine, and an import on the event loop would stall every other session's stream
    meanwhile."""
    wanted = {"mcp.client.stdio"}  # the SDK's Client imports it, and streamable HTTP
    wanted |= {"mcp.client.sse" for s in specs if isinstance(s, McpRemoteSpec)}
    for module in sorted(wanted - set(sys.modules)):
        await anyio.to_thread.run_sync(importlib.import_module, module)


def _usable_stderr() -> TextIO | None:
    """The process's stderr, if it is a real file a child can inherit."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    return sys.stderr


class McpConnections:
    """The MCP servers of one session: start them, expose their tools, stop them.

    ``start`` and ``aclose`` may be called from any task (see the module docstring).
    ``task_group``: a long-lived group to run the host tasks in; without one they
    run as asyncio tasks. ``errlog``: where servers' stderr goes (default: ours if it
    is a real file, else nowhere)."""

    def __init__(
        self,
        *,
        cwd: str | None = None,
        task_group: TaskGroup | None = None,
        errlog: TextIO | None = None,
        start_timeout: float = START_TIMEOUT,
        stop_timeout: float = STOP_TIMEOUT,
        call_timeout: float = CALL_TIMEOUT,
    ) -> None:
        self.cwd = cwd
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.call_timeout = call_timeout
        self.failures: dict[str, str] = {}
        """Server name → why it is not running (config error, spawn failure, timeout)."""
        self._task_group = task_group
        self._errlog = errlog
        self._own_errlog: TextIO | None = None
        self._hosts: dict[str, _ServerHost] = {}
        self._tools: dict[str, list[McpTool]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def running(self) -> list[str]:
        return [name for name, h in self._hosts.items() if h.client is not None]

    @property
    def start_times(self) -> dict[str, float]:
        """Seconds each running server took from spawn to its tool list."""
        return {n: h.started_in for n, h in self._hosts.items() if h.started_in is not None}

    def tools(self) -> list[McpTool]:
        return [t for tools in self._tools.values() for t in tools]

    async def start(self, servers: Iterable[Any], taken: Iterable[str] = ()) -> list[McpTool]:
        """Start every server not already running (by name), concurrently; return the
        tools that became available. A server that fails is logged and recorded in
        :attr:`failures`; the others still start."""
        specs: list[ServerSpec] = []
        for raw in servers:
            try:
                spec = parse_server(raw)
            except McpConfigError as exc:
                name = raw.get("name") if isinstance(raw, dict) else None
                self.failures[str(name or "?")] = str(exc)
                continue
            if spec.name in self._hosts or any(s.name == spec.name for s in specs):
                continue  # started once per session
            specs.append(spec)
        if not specs:
            return []
        errlog = self._stderr()
        hosts = [_ServerHost(spec, self.cwd, errlog) for spec in specs]
        for host in hosts:  # claimed before any await, so a concurrent start skips them
            self._hosts[host.spec.name] = host
            self.failures.pop(host.spec.name, None)
        try:
            await _import_sdk(specs)
            for host in hosts:
                self._spawn(host)
            async with anyio.create_task_group() as tg:
                for host in hosts:
                    tg.start_soon(self._await_ready, host)
        except BaseException:
            for host in hosts:  # the hosts clean up in their own tasks
                self._hosts.pop(host.spec.name, None)
                host.request_stop()
                host.scope.cancel()
            raise
        names = set(taken) | {t.name for t in self.tools()}
        added: list[McpTool] = []
        for host in hosts:
            if host.client is None or host.stop.is_set():  # failed, or closed meanwhile
                self.failures[host.spec.name] = host.error or "not running"
                self._hosts.pop(host.spec.name, None)
                continue
            tools: list[McpTool] = []
            for remote in host.remote_tools:
                name = tool_name(host.spec.name, remote.name, names)
                names.add(name)
                tools.append(McpTool(host, name, remote, self.call_timeout))
            self._tools[host.spec.name] = tools
            added += tools
            log.info(
                "MCP server %r ready in %.2f s with %d tools",
                host.spec.name,
                host.started_in or 0.0,
                len(tools),
            )
        return added

    async def aclose(self) -> None:
        """Stop every server and wait (bounded) until each process is gone."""
        hosts = list(self._hosts.values())
        self._hosts.clear()
        self._tools.clear()
        for host in hosts:
            host.request_stop()
        with anyio.move_on_after(self.stop_timeout):
            for host in hosts:
                await host.closed.wait()
        for host in hosts:
            if not host.closed.is_set():
                log.warning("MCP server %r did not stop in time; cancelling", host.spec.name)
                host.scope.cancel()
        if self._own_errlog is not None:
            self._own_errlog.close()
            self._own_errlog = None

    def _spawn(self, host: _ServerHost) -> None:
        if self._task_group is not None:
            self._task_group.start_soon(host.run, name=f"mcp:{host.spec.name}")
            return
        task = asyncio.get_running_loop().create_task(host.run(), name=f"mcp:{host.spec.name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _await_ready(self, host: _ServerHost) -> None:
        with anyio.move_on_after(self.start_timeout) as waited:
            await host.ready.wait()
        if waited.cancelled_caught:
            host.error = f"did not start within {self.start_timeout:g} s"
            host.scope.cancel()

    def _stderr(self) -> TextIO:
        if self._errlog is not None:
            return self._errlog
        usable = _usable_stderr()
        if usable is not None:
            return usable
        if self._own_errlog is None:
            self._own_errlog = open(os.devnull, "w")  # noqa: SIM115 - closed in aclose
        return self._own_errlog
