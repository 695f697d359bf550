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


def test_a_replay_spliced_from_kept_json_is_the_same_bytes() -> None:
    """``session/load`` sends updates kept as JSON on the transcript; the client gets
    the very bytes the dict path writes, in both framings."""
    import orjson

    from threadline.engine.blocks import call_block
    from threadline.rpc import projection as updates

    batch = [
        updates.message_chunk("agent_message_chunk", "m1", "a1", "hi \u00e9"),
        updates.tool_call(
            call_block("c1", "read_file", {"p": "x"}, title="Read", kind="read", locations=[]),
            "a1",
        ),
        updates.message_chunk("agent_message_chunk", "m2", "a1", "there"),
    ]
    for framing in ("headers", "lines"):
        outs: list[bytes] = []
        for send in ("dicts", "json"):
            sink = io.BytesIO()
            box = Outbox(sink)
            box.framing = framing
            if send == "dicts":
                box.send_updates("sess_\u00e9", batch)
            else:
                box.send_updates_json("sess_\u00e9", [orjson.dumps(u) for u in batch])
            box.close()
            outs.append(sink.getvalue())
        assert outs[0] == outs[1] and outs[0].count(b"session/update") == 3


def test_the_outbox_is_idle_only_with_nothing_queued_or_being_written() -> None:
    """Start-up work on the loop waits while a replay is written (`Outbox.idle`): a
    client that has not read yet keeps the writer busy."""
    import os
    import time

    read_end, write_end = os.pipe()
    box = Outbox(os.fdopen(write_end, "wb", buffering=0))
    try:
        assert box.idle()
        box.send_json(b'"' + b"x" * 300_000 + b'"')  # more than a pipe holds
        deadline = time.monotonic() + 5
        while box.pending() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not box.idle(), "written into a full pipe: still writing"
        got = b""
        while len(got) < 300_002:
            got += os.read(read_end, 1 << 16)
        deadline = time.monotonic() + 5
        while not box.idle() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert box.idle()
    finally:
        box.close()
        os.close(read_end)
