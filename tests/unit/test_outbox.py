"""The outbox writes every byte (even when the pipe takes a little at a time)."""

from __future__ import annotations

import io
import json

from threadline.rpc.outbox import Outbox, dumps


class Trickle(io.RawIOBase):
    """A pipe that accepts at most 1,000 bytes per write, as a signal-interrupted one does."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b: bytes) -> int:  # type: ignore[override]
        chunk = bytes(b[:1000])
        self.data += chunk
        return len(chunk)


def test_short_writes_lose_nothing() -> None:
    sink = Trickle()
    box = Outbox(sink)  # type: ignore[arg-type]
    box.framing = "lines"
    big = {"jsonrpc": "2.0", "id": 1, "result": {"text": "é" * 300_000}}
    box.send(big)
    box.close()
    assert json.loads(sink.data.decode()) == big


def test_queued_chunks_merge_in_order_when_the_client_is_slow() -> None:
    sink = Trickle()
    box = Outbox(sink)  # type: ignore[arg-type]
    box.framing = "lines"
    for i in range(2000):
        box.send_update(
            "s",
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "m",
                "content": {"type": "text", "text": f"{i},"},
            },
        )
    box.close()
    lines = [json.loads(x) for x in sink.data.decode().splitlines()]
    text = "".join(m["params"]["update"]["content"]["text"] for m in lines)
    assert text == "".join(f"{i}," for i in range(2000))


def test_ids_beyond_64_bits_still_serialise() -> None:
    assert json.loads(dumps({"id": 2**70, "x": "ü"})) == {"id": 2**70, "x": "ü"}
