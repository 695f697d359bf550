"""The bench's own measuring parts: if these are wrong, every figure is.

Run: ``.venv/bin/pytest bench/tests -q`` (not collected by the main test suite).
"""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from bench.peers.peer_script import deltas, steps_of
from bench.report import Row, render
from bench.servers import PYGLS, new_session, prompt_params, spawn
from bench.stats import percentile, summarize
from bench.streaming import Received, repeat_model
from bench.wire import Connection, encode


def test_percentile_interpolates_between_ranks() -> None:
    data = [float(x) for x in range(1, 101)]
    assert percentile(data, 50) == pytest.approx(50.5)
    assert percentile(data, 99) == pytest.approx(99.01)
    assert percentile(data, 0) == 1.0 and percentile(data, 100) == 100.0
    assert math.isnan(percentile([], 50))


def test_summarize_sorts_and_ratios() -> None:
    s = summarize([3.0, 1.0, 2.0])
    assert (s.n, s.min, s.p50, s.max) == (3, 1.0, 2.0, 3.0)
    assert s.ratio(summarize([4.0])) == pytest.approx(0.5)


def test_header_frames_split_across_reads_and_with_content_type() -> None:
    a = encode({"jsonrpc": "2.0", "id": 1, "result": {"t": "é"}}, "headers")
    body = json.dumps({"jsonrpc": "2.0", "method": "x"}).encode()
    b = b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc\r\n\r\n" % len(body) + body
    stream = a + b
    buf = bytearray()
    out: list[bytes] = []
    for i in range(0, len(stream), 7):  # arrive in small pieces
        buf += stream[i : i + 7]
        out += Connection._split_headers(buf)
    assert [json.loads(x) for x in out] == [
        json.loads(a.split(b"\r\n\r\n", 1)[1]),
        json.loads(body),
    ]
    assert not buf


def test_line_frames_keep_a_partial_line() -> None:
    buf = bytearray(b'{"a":1}\n\n{"b":2}\n{"c"')
    assert [json.loads(x) for x in Connection._split_lines(buf)] == [{"a": 1}, {"b": 2}]
    assert bytes(buf) == b'{"c"'


def test_peer_script_reads_threadline_model_strings() -> None:
    steps = steps_of(repeat_model(3, "ab"))
    assert steps == [{"repeat": {"text": "ab", "count": 3}}]
    assert steps_of("scripted:echo") == [] and steps_of(None) == []

    async def collect() -> list[str]:
        return [t async for t in deltas([*steps, {"sleep": 0}, {"text": "z"}])]

    assert asyncio.run(collect()) == ["ab", "ab", "ab", "z"]


def test_stamped_deltas_are_monotonic_clock_readings() -> None:
    async def collect() -> list[str]:
        return [t async for t in deltas([{"repeat": {"text": "x", "count": 3}}], stamp=True)]

    stamps = [int(t.rstrip(";")) for t in asyncio.run(collect())]
    assert stamps == sorted(stamps) and all(s > 0 for s in stamps)


def test_render_escapes_pipes() -> None:
    table = render([Row("f", "a|b", "1")])
    assert "a\\|b" in table and table.count("\n") == 2


@pytest.mark.timeout(120)
def test_bare_pygls_peer_streams_every_delta_to_the_bench_client() -> None:
    conn = spawn(PYGLS)
    try:
        sid = new_session(conn, repeat_model(500))
        received = Received(keep_text=True)
        conn.on_update = received
        pending = conn.send("session/prompt", prompt_params(sid))
        assert pending.wait(60) == {"stopReason": "end_turn"}
        assert received.chunks[sid] == 500
        assert "".join(received.text[sid]) == "x" * 500
        assert pending.t_sent < pending.t_recv <= pending.t_done
    finally:
        conn.close()
