"""Forking a session: one new row pointing at the parent's log, at a message or at its
end; a turn running then is recorded in the child as if interrupted there, while the
parent's turn keeps running."""

from __future__ import annotations

from .errors import InvalidParams, SessionNotFound
from .ids import new_id, now_iso
from .labels import fork_title, turn_end
from .live import LiveSessions
from .mutations import Mutation
from .outcomes import Forked
from .transcript import Transcript


def fork(live: LiveSessions, session_id: str, message_id: str | None, cwd: str | None) -> Forked:
    return fork_with_base(live, session_id, message_id, cwd)[0]


def fork_with_base(
    live: LiveSessions, session_id: str, message_id: str | None, cwd: str | None
) -> tuple[Forked, Transcript | None]:
    """The fork, and for a fork at the parent's end the parent's transcript copied for
    it (`Transcript.copy`: every message shared), so the child opens without folding
    the parent's log again (`LiveSessions.open_fork`): forking stays O(1) in the
    parent's messages in memory as it is in the store. None when the fork is at an
    earlier message, or when the parent held here is behind the store (another
    process committed between its catch-up and the fork's row): the child is then
    folded from the store."""
    parent = live.open(session_id)
    store = live.store
    row = store.get_session(parent.id)
    if row is None:
        raise SessionNotFound(parent.id)
    snapshot: list[Mutation] = []
    base: Transcript | None = None
    if message_id is not None:
        at = turn_end(parent.transcript.messages, message_id) or message_id
        where = store.locate_message(row.id, at)
        if where is None:
            raise InvalidParams(
                f"message {message_id} is not in session {row.id}", {"messageId": message_id}
            )
        base_id, base_seq, base_count = where
        forked_at: str | None = at
    else:
        base_id, base_seq, base_count = row.id, row.last_seq, row.message_count
        forked_at = parent.transcript.last_message_id
        snapshot = live.snapshot(parent)
        if parent.seq == row.last_seq:
            base = parent.transcript.copy()
    child = store.fork_session(
        new_id("sess"), row, base_id, base_seq, base_count, forked_at, cwd or row.cwd, now_iso()
    )
    if snapshot:
        store.append(child.id, [m.to_event() for m in snapshot], now_iso())
    # Named apart from its parent, so the two differ in every session list.
    store.update_session(child.id, title=fork_title(row.title or f"session {row.id}"))
    return Forked(child.id, row.id, forked_at), base
