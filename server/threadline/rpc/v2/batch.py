"""JSON-RPC batches on a v2 connection (ACP v2 accepts them on stdio; v1 answers a
batch with one -32600).

The entries are handled as if each had come alone, in order; their answers are
collected and written as one array once every entry that gets an answer has it
(a notification gets none; an invalid entry gets its -32600). An entry served in a
task (``session/prompt``…) is answered when its task ends, so the array waits for it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from typing import Any

Reply = dict[str, Any]


class _Batch:
    __slots__ = ("open", "replies", "waiting")

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.waiting: set[Any] = set()
        self.open = True


class Batches:
    def __init__(self, send_array: Callable[[list[Reply]], None]) -> None:
        self._send_array = send_array
        self.current: _Batch | None = None
        """The batch whose entries are being handled now."""
        self._by_id: dict[Any, _Batch] = {}

    @contextlib.contextmanager
    def collecting(self) -> Generator[None]:
        """Handle a batch's entries inside this block."""
        batch = self.current = _Batch()
        try:
            yield
        finally:
            self.current = None
            batch.open = False
            self._flush(batch)

    def later(self, msg_id: Any) -> None:
        """An entry of the batch now handled is answered by a task, later."""
        if self.current is not None:
            self.current.waiting.add(msg_id)
            self._by_id[msg_id] = self.current

    def take(self, reply: Reply) -> bool:
        """Keep ``reply`` for its batch's array; False when it belongs to none."""
        msg_id = reply.get("id")
        batch = self.current
        if batch is None:
            try:
                batch = self._by_id.pop(msg_id, None)
            except TypeError:  # an unhashable id is no batch's
                return False
        if batch is None:
            return False
        batch.replies.append(reply)
        with contextlib.suppress(TypeError):
            batch.waiting.discard(msg_id)
        self._flush(batch)
        return True

    def _flush(self, batch: _Batch) -> None:
        if not batch.open and not batch.waiting and batch.replies:
            replies, batch.replies = batch.replies, []
            self._send_array(replies)
