"""What the engine needs from the connection to its client (implemented by ``rpc/``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import orjson

from .updates import Update


class ClientLink(Protocol):
    def notify_update(self, session_id: str, update: Update) -> None:
        """Queue a ``session/update``; never blocks (slow clients get coalesced deltas)."""
        ...

    def notify_updates(self, session_id: str, updates: Sequence[Update]) -> None:
        """Queue many ``session/update``s at once, in order (a replay): the same
        notifications as `notify_update` for each, with less overhead."""
        ...

    def notify_updates_json(self, session_id: str, updates: Sequence[bytes]) -> None:
        """`notify_updates` for updates already written as JSON (orjson's bytes)."""
        ...

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a server-to-client request and wait for its result (cancellable)."""
        ...

    def client_capabilities(self) -> dict[str, Any]: ...


class NullLink:
    """A link that drops everything: for benchmarks and engine-only tests."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Update]] = []
        self.record = False

    def notify_update(self, session_id: str, update: Update) -> None:
        if self.record:
            self.updates.append((session_id, update))

    def notify_updates(self, session_id: str, updates: Sequence[Update]) -> None:
        for update in updates:
            self.notify_update(session_id, update)

    def notify_updates_json(self, session_id: str, updates: Sequence[bytes]) -> None:
        self.notify_updates(session_id, [orjson.loads(u) for u in updates])

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        raise RuntimeError(f"no client to answer {method}")

    def client_capabilities(self) -> dict[str, Any]:
        return {}
