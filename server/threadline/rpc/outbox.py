"""The outbox: every message to the client goes through one writer thread.

Writing to stdout can block when the client stops reading; doing it on the event loop
would freeze every session. Here the loop only appends to a queue. While a client
is slow, consecutive text chunks of the same message merge in the queue, so memory
stays bounded by the text itself and nothing is dropped or reordered.
"""

from __future__ import annotations

import json
import logging
import select
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, cast

import orjson

from ..engine.rawjson import RawJSON
from .framing import Framing, encode

log = logging.getLogger(__name__)

_MERGEABLE = ("agent_message_chunk", "agent_thought_chunk")


def dumps(message: Any) -> bytes:
    """orjson (about 25× faster on large answers such as a long history); the stdlib
    for what orjson refuses (integers beyond 64 bits, lone surrogates)."""
    try:
        return orjson.dumps(message, default=_splice)
    except TypeError:
        # ASCII escapes also carry lone surrogates a client put in an id or a method.
        return json.dumps(
            message, ensure_ascii=True, separators=(",", ":"), default=_parsed
        ).encode()


def _splice(value: Any) -> orjson.Fragment:
    if isinstance(value, RawJSON):
        return orjson.Fragment(value.data)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def _parsed(value: Any) -> Any:
    if isinstance(value, RawJSON):
        return json.loads(value.data)
    raise TypeError(f"cannot serialise {type(value).__name__}")


WATCH_SECONDS = 0.5
"""How often an idle writer checks whether the client closed its end of the output."""


def _peer_closed(stream: BinaryIO) -> bool:
    """Whether the reading end of our output is gone (``POLLERR``/``POLLHUP`` on a
    pipe or socket), without writing anything."""
    try:
        fd = stream.fileno()
        poller = select.poll()
        poller.register(fd, 0)  # error and hang-up conditions are always reported
        events = poller.poll(0)
    except (OSError, ValueError, AttributeError):
        return False  # not a real file (tests), or already closed: a write will tell
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in events)


def _substitute(message: dict[str, Any]) -> bytes | None:
    """A response that cannot be serialised still answers its request (with -32603);
    anything else is dropped."""
    if "method" in message or not ("result" in message or "error" in message):
        return None
    error = {"code": -32603, "message": "internal error: the answer could not be encoded"}
    try:
        return dumps({"jsonrpc": "2.0", "id": message.get("id"), "error": error})
    except (TypeError, ValueError):
        return dumps({"jsonrpc": "2.0", "id": None, "error": error})


def write_all(stream: BinaryIO, data: bytes | bytearray) -> None:
    """A raw pipe write may be partial (a signal, a full pipe): write the rest too."""
    view = memoryview(data)
    while view:
        written = cast("int | None", stream.write(view))
        if written is None:  # non-blocking stream with a full pipe: wait and retry
            time.sleep(0.001)
            continue
        view = view[written:]
    stream.flush()


class _Chunk:
    """A pending text chunk notification that later chunks may be appended to."""

    __slots__ = ("key", "parts", "session_id", "update")

    def __init__(self, session_id: str, update: dict[str, Any]) -> None:
        self.session_id = session_id
        self.update = update
        self.key = (session_id, update["sessionUpdate"], update.get("messageId"))
        self.parts = [update["content"]["text"]]

    def message(self) -> dict[str, Any]:
        update = dict(self.update)
        update["content"] = {"type": "text", "text": "".join(self.parts)}
        return {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": self.session_id, "update": update},
        }


class _Raw:
    """A message already written as JSON."""

    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        self.body = body


class _Updates:
    """Many ``session/update``s of one session already written as JSON (a replay),
    queued as one item and framed together on the writer thread: 10,000 updates are
    one queue entry and one join, not 10,000 of each."""

    __slots__ = ("head", "updates")

    def __init__(self, head: bytes, updates: Sequence[bytes]) -> None:
        self.head = head
        self.updates = updates

    def frames(self, framing: Framing | None) -> bytes:
        head, n = self.head, len(self.head) + 2
        if framing == "lines":
            return b"".join([b"%s%s}}\n" % (head, u) for u in self.updates])
        return b"".join(
            [b"Content-Length: %d\r\n\r\n%s%s}}" % (n + len(u), head, u) for u in self.updates]
        )


class Outbox:
    def __init__(self, stream: BinaryIO, on_broken: Callable[[], None] | None = None) -> None:
        """``on_broken`` is called (once, on the writer thread) when the client's end
        of the output is found closed: by a failed write, or while idle by polling."""
        self._stream = stream
        self._queue: deque[dict[str, Any] | _Chunk | _Raw | _Updates] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._broken = False
        self.on_broken = on_broken
        self.framing: Framing | None = None
        self.coalesced = 0
        self.sent = 0
        self._writing = False
        self._thread = threading.Thread(target=self._run, name="threadline-outbox", daemon=True)
        self._thread.start()

    @property
    def broken(self) -> bool:
        return self._broken

    def send(self, message: dict[str, Any]) -> None:
        with self._cond:
            if self._closed:
                return
            self._queue.append(message)
            self._cond.notify()

    def send_json(self, body: bytes) -> None:
        """Queue a message already written as JSON (a batch's array of answers)."""
        with self._cond:
            if self._closed:
                return
            self._queue.append(_Raw(body))
            self._cond.notify()

    def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        """Queue a ``session/update``; text chunks merge with a queued chunk of the same message."""
        with self._cond:
            if self._closed:
                return
            self._queue_update(session_id, update)
            self._cond.notify()

    def send_updates(self, session_id: str, updates: Sequence[dict[str, Any]]) -> None:
        """Queue many ``session/update``s at once (a ``session/load`` replay): the same
        notifications as one `send_update` each, for one lock and one wake-up."""
        with self._cond:
            if self._closed:
                return
            for update in updates:
                self._queue_update(session_id, update)
            self._cond.notify()

    def send_updates_json(self, session_id: str, updates: Sequence[bytes]) -> None:
        """`send_updates` for updates already written as JSON (a replay kept on the
        transcript): the same notifications, byte for byte, spliced, not serialised."""
        head = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
        head += orjson.dumps(session_id) + b',"update":'
        with self._cond:
            if self._closed:
                return
            self._queue.append(_Updates(head, updates))
            self._cond.notify()

    def _queue_update(self, session_id: str, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind in _MERGEABLE and update.get("content", {}).get("type") == "text":
            last = self._queue[-1] if self._queue else None
            if isinstance(last, _Chunk) and last.key == (
                session_id,
                kind,
                update.get("messageId"),
            ):
                last.parts.append(update["content"]["text"])
                self.coalesced += 1
                return
            self._queue.append(_Chunk(session_id, update))
        else:
            self._queue.append(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": session_id, "update": update},
                }
            )

    def pending(self) -> int:
        with self._cond:
            return len(self._queue)

    def idle(self) -> bool:
        """Nothing queued and nothing being written (a replay's frames being made and
        written holds the writer for tens of milliseconds)."""
        with self._cond:
            return not self._queue and not self._writing

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    # Idle: a client that closed our stdout but not our stdin must
                    # still end the session (a pending request would wait for ever).
                    idle = not self._cond.wait(WATCH_SECONDS)
                    if idle and not self._broken and _peer_closed(self._stream):
                        self._set_broken()
                if not self._queue:
                    return
                batch: list[dict[str, Any] | _Chunk | _Raw | _Updates] = []
                while self._queue and len(batch) < 256:
                    batch.append(self._queue.popleft())
                self._writing = True
            try:
                self._write_batch(batch)
            finally:
                with self._cond:
                    self._writing = False

    def _write_batch(self, batch: list[dict[str, Any] | _Chunk | _Raw | _Updates]) -> None:
        if self._broken:
            return
        out = bytearray()
        count = len(batch)
        for item in batch:
            if isinstance(item, _Raw):
                out += encode(item.body, self.framing)
                continue
            if isinstance(item, _Updates):
                out += item.frames(self.framing)
                count += len(item.updates) - 1
                continue
            msg = item.message() if isinstance(item, _Chunk) else item
            try:
                body = dumps(msg)
            except (TypeError, ValueError):
                log.exception("cannot serialise outgoing message")
                body = _substitute(msg)
                if body is None:
                    continue
            out += encode(body, self.framing)
        try:
            write_all(self._stream, out)
            self.sent += count
        except (BrokenPipeError, OSError, ValueError):
            self._set_broken()

    def _set_broken(self) -> None:
        log.warning("client output closed; dropping further messages")
        self._broken = True
        if self.on_broken is not None:
            try:
                self.on_broken()
            except Exception:
                log.exception("could not report the closed output")

    def close(self, timeout: float = 5.0) -> None:
        """Flush what is queued (bounded by ``timeout``), then stop the writer."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout)
