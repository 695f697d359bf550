"""``threadline serve`` without issue 17's long-session work, for same-run ratios.

The history/load figure alternates with this server on the same data folder: a closed
session's fold is not kept, in memory or in the store, nor read from the store (each
reopen reads and folds the whole log),
``session/history`` serialises every message again instead of splicing its kept
JSON, and ``session/load`` builds and serialises every update again and queues them
one at a time. Everything else is
the unchanged server.

Run: ``python bench/peers/threadline_uncached.py`` (same environment as ``threadline serve``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadline.engine import folds, transcript
from threadline.rpc import server
from threadline.rpc.boot import serve


def _no_put(self: folds.FoldCache, session_id: str, t: transcript.Transcript, seq: int) -> None:
    return None


def _no_restore(self: folds.FoldCache, session_id: str) -> None:
    return None


def _no_store(self: folds.FoldCache, sid: str, t: transcript.Transcript, seq: int) -> None:
    return None


def _one_by_one(self: server.ThreadlineServer, sid: str, updates: Sequence[dict[str, Any]]) -> None:
    for update in updates:
        self.outbox.send_update(sid, update)


def _no_replay_json(self: transcript.Transcript, project: Any, variant: object = None) -> None:
    return None


folds.FoldCache.put = _no_put  # type: ignore[method-assign]
folds.FoldCache._restore = _no_restore  # type: ignore[method-assign]  # pyright: ignore[reportPrivateUsage]
folds.FoldCache._keep_later = _no_store  # type: ignore[method-assign]  # pyright: ignore[reportPrivateUsage]
transcript.Transcript.replay_json = _no_replay_json  # type: ignore[method-assign]
transcript.Transcript.history_json = transcript.Transcript.history  # type: ignore[method-assign]
server.ThreadlineServer.notify_updates = _one_by_one  # type: ignore[method-assign]

if __name__ == "__main__":
    raise SystemExit(serve())
