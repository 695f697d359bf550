"""What an ACP ``mcpServers`` entry asks for, checked before anything is started.

ACP's ``McpServer`` is a union: a stdio entry (``command``, ``args``, ``env`` as
name/value pairs; every agent must support it) or a remote one with ``type: "http"``
(MCP's streamable HTTP) or ``type: "sse"`` (MCP's older HTTP+SSE transport), each with
a ``url`` and ``headers`` as name/value pairs. An entry that cannot be started is an
:class:`McpConfigError`, reported for that server alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

RemoteTransport = Literal["http", "sse"]


class McpConfigError(ValueError):
    """An ``mcpServers`` entry that cannot be started."""


@dataclass(frozen=True, slots=True)
class McpServerSpec:
    """A stdio server entry of ACP ``mcpServers``."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class McpRemoteSpec:
    """An ``http`` or ``sse`` server entry of ACP ``mcpServers``."""

    name: str
    url: str
    transport: RemoteTransport
    headers: tuple[tuple[str, str], ...] = ()

    def header_map(self) -> dict[str, str]:
        """The headers as the HTTP client takes them (a repeated name: the last wins)."""
        return dict(self.headers)


ServerSpec = McpServerSpec | McpRemoteSpec


def _pairs(raw: Any) -> tuple[tuple[str, str], ...]:
    """ACP's ``[{name, value}]`` lists (``env``, ``headers``); malformed items skipped."""
    pairs: list[tuple[str, str]] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            pairs.append((item["name"], str(item.get("value", ""))))
    return tuple(pairs)


def parse_server(raw: Any) -> ServerSpec:
    """An ``mcpServers`` entry (a wire dict or a protocol model) as a spec."""
    if hasattr(raw, "model_dump"):  # a protocol model
        raw = raw.model_dump(by_alias=True, exclude_none=True)
    if not isinstance(raw, dict):
        raise McpConfigError("an mcpServers entry must be an object")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise McpConfigError("an mcpServers entry needs a name")
    kind = raw.get("type", "stdio")
    if kind in ("http", "sse"):
        url = raw.get("url")
        if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
            raise McpConfigError(f"MCP server {name!r} needs an http(s) url")
        return McpRemoteSpec(name, url, kind, _pairs(raw.get("headers")))
    if kind != "stdio":
        raise McpConfigError(f"{kind} MCP servers are not supported; use stdio, http or sse")
    command = raw.get("command")
    if not isinstance(command, str) or not command:
        raise McpConfigError(f"MCP server {name!r} needs a command")
    args = raw.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise McpConfigError(f"MCP server {name!r}: args must be strings")
    return McpServerSpec(name, command, tuple(args), _pairs(raw.get("env")))
