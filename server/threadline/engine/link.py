"""What the engine needs from the connection to its client (implemented by ``rpc/``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from .events import Event, ReplayProjection


class ClientLink(Protocol):
    def announce(self, session_id: str, event: Event) -> None:
        """Show the client an engine event (projected as the link's client is shown
        it); never blocks (slow clients get coalesced deltas)."""
        ...

    @property
    def projection(self) -> ReplayProjection:
        """How this client is shown stored history on ``session/load``."""
        ...

    def notify_updates(self, session_id: str, updates: Sequence[dict[str, Any]]) -> None:
        """Queue many ``session/update``s at once, in order (a replay made by
        `projection`), with one lock."""
        ...

    def notify_updates_json(self, session_id: str, updates: Sequence[bytes]) -> None:
        """`notify_updates` for updates already written as JSON (orjson's bytes)."""
        ...

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a server-to-client request and wait for its result (cancellable)."""
        ...

    def client_capabilities(self) -> dict[str, Any]: ...
