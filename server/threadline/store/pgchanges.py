"""Which sessions other processes changed, as heard on PostgreSQL's change feed.

Every write notifies every sidecar of the store. A notification that named no
session told a watcher only that something changed, so every sidecar read every
session it shows each time any sidecar anywhere wrote: on a team store streaming
turns, 20 snapshot reads a second per sidecar, each waited for on its event loop,
whatever the sessions written. A streamed turn's writes (`store.pgwrites`, the
journal) name their session in the payload, and a watcher reads only the sessions
named since it last looked (`HeardChanges.since`). Writes of the shared path name
none, and mean "any session may have changed", as before.
"""

from __future__ import annotations

from collections.abc import Iterable

PAYLOAD_BYTES = 7000
"""Past this a notification names no session (PostgreSQL refuses payloads of 8000
bytes): a watcher then looks at every session, which is only slower."""

KEPT = 4096
"""Sessions remembered as changed; past this the memory is dropped and the next look
reads every session (a process rarely shows more than a few dozen)."""


def payload(instance: str, session_ids: Iterable[str] = ()) -> str:
    """What a write notifies: the writer's id (so it does not count its own), then the
    sessions it changed, space-separated."""
    named = " ".join(dict.fromkeys(session_ids))
    if not named or len(instance) + 1 + len(named) > PAYLOAD_BYTES:
        return instance
    return f"{instance} {named}"


class HeardChanges:
    """The other processes' notifications counted (the change token) and, for those
    that named their sessions, when each session last changed. Not thread-safe: the
    store calls it under its listen connection's lock."""

    def __init__(self, instance: str) -> None:
        self.instance = instance
        self.token = 0
        self._at: dict[str, int] = {}
        self._anything_at = 0
        """The token of the last change that named no session (or was missed)."""

    def hear(self, notified: str) -> None:
        writer, *sessions = notified.split(" ")
        if writer == self.instance:
            return
        self.token += 1
        if not sessions or len(self._at) + len(sessions) > KEPT:
            self._at.clear()
            self._anything_at = self.token
            return
        for session_id in sessions:
            self._at[session_id] = self.token

    def missed(self) -> None:
        """Notifications may have been lost (the connection dropped): anything changed."""
        self.token += 1
        self._anything_at = self.token
        self._at.clear()

    def since(self, token: int) -> frozenset[str] | None:
        """The sessions changed after ``token``; None if any may have."""
        if self._anything_at > token:
            return None
        return frozenset(s for s, at in self._at.items() if at > token)
