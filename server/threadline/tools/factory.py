"""Build one session's tool registry from every source, and close what needs closing.

Sources, in the order the model sees them: built-in workspace tools (per client
capabilities), client-defined tools (``tool/call``), MCP server tools, and exit tools
(signals, never run). Names the client declared win: a built-in tool whose name a
client or exit tool also uses is left out, and MCP tools get ``<server>__<tool>``
names that avoid every other name.

How the engine uses it:

* when a ``Session`` object is built (new, or reloaded from the store), synchronously:
  ``toolset = SessionTools(build_registry(...), cwd=..., task_group=...)`` and
  ``session.tools = toolset.registry``;
* ``session/new``, ``session/load``, ``session/resume`` with ``mcpServers``:
  ``await toolset.add_mcp_servers(servers)`` (a server already running under that
  name is not started again);
* ``session/close``, ``session/delete``, server shutdown: ``await toolset.aclose()``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

import anyio
from anyio.abc import TaskGroup

from .base import Tool
from .client import ClientTool
from .commands.run_command import RunCommand
from .mcp import McpConnections
from .plan import UpdatePlan
from .registry import ToolRegistry
from .workspace import workspace_tools

log = logging.getLogger(__name__)


def builtin_tools(client_capabilities: dict[str, Any] | None) -> list[Tool]:
    """Every built-in tool a client gets: the workspace's file tools, ``run_command``
    (in the client's terminal when it has one, else in the sidecar) and ``update_plan``."""
    return [*workspace_tools(client_capabilities), RunCommand(), UpdatePlan()]


def build_registry(
    *,
    tools: Sequence[dict[str, Any]] = (),
    exit_tools: Sequence[dict[str, Any]] = (),
    client_capabilities: dict[str, Any] | None = None,
    builtin: bool | Iterable[str] = True,
    extra_tools: Sequence[Tool] = (),
) -> ToolRegistry:
    """Built-in, client and exit tools (no MCP): cheap, synchronous, no processes.

    ``tools`` / ``exit_tools`` are the session config's wire dicts (``name``,
    ``description``, ``inputSchema``, ``parallelizable``, ``needsApproval``,
    ``alwaysOffer``).
    ``builtin``: ``True`` for every built-in workspace tool, ``False`` for none, or
    the names to keep. ``extra_tools``: other server-side tools of the session (such
    as memory tools), placed after the workspace tools and shadowed the same way."""
    client: list[Tool] = [ClientTool(d) for d in tools]
    reserved = {t.name for t in client} | {d["name"] for d in exit_tools}
    chosen: list[Tool] = []
    if builtin:
        keep = None if builtin is True else set(builtin)
        chosen += [t for t in builtin_tools(client_capabilities) if keep is None or t.name in keep]
    chosen += extra_tools
    for tool in [t for t in chosen if t.name in reserved]:
        log.info("server tool %s is shadowed by a client-declared tool", tool.name)
        chosen.remove(tool)
    always = [d["name"] for d in [*tools, *exit_tools] if d.get("alwaysOffer")]
    return ToolRegistry([*chosen, *client], exit_tools, always)


class SessionTools:
    """A session's registry plus the MCP connections behind some of its tools."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        cwd: str | None = None,
        task_group: TaskGroup | None = None,
        errlog: TextIO | None = None,
    ) -> None:
        self.registry = registry
        self._cwd = cwd
        self._task_group = task_group
        self._errlog = errlog
        self.mcp: McpConnections | None = None

    @property
    def failures(self) -> dict[str, str]:
        """MCP servers that are not running, with the reason (for logs or ``_meta``)."""
        return dict(self.mcp.failures) if self.mcp else {}

    async def add_mcp_servers(self, servers: Iterable[Any]) -> list[str]:
        """Start the servers not yet running and register their tools; returns the
        names of the tools added. Safe to call again on ``session/load``/``resume``."""
        servers = list(servers)
        if not servers:
            return []
        if self.mcp is None:
            self.mcp = McpConnections(
                cwd=self._cwd, task_group=self._task_group, errlog=self._errlog
            )
        taken = set(self.registry.names()) | set(self.registry.exit_names)
        added = await self.mcp.start(servers, taken)
        for tool in added:
            self.registry.add(tool)
        return [t.name for t in added]

    async def aclose(self) -> None:
        """Stop the MCP servers; their tools stay listed but answer "not running".
        Shielded, so a closing request that is itself cancelled still stops them."""
        if self.mcp is None:
            return
        with anyio.CancelScope(shield=True):
            await self.mcp.aclose()
