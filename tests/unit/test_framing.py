from __future__ import annotations

import json

from threadline.rpc.framing import FrameDecoder, FrameError, encode


def frames(decoder: FrameDecoder, data: bytes, step: int) -> list[bytes | FrameError]:
    out: list[bytes | FrameError] = []
    for i in range(0, len(data), step):
        out += decoder.feed(data[i : i + step])
    return out


def test_content_length_frames_split_anywhere() -> None:
    msgs = [{"id": i, "text": "é" * i} for i in range(5)]
    data = b"".join(encode(json.dumps(m, ensure_ascii=False).encode(), "headers") for m in msgs)
    for step in (1, 3, 7, len(data)):
        d = FrameDecoder()
        got = frames(d, data, step)
        assert d.framing == "headers"
        assert [json.loads(g) for g in got if isinstance(g, bytes)] == msgs


def test_lines_detected_from_first_byte_and_blank_lines_skipped() -> None:
    d = FrameDecoder()
    got = frames(d, b'\n  {"a": 1}\n\n{"b": 2}\r\n', 2)
    assert d.framing == "lines"
    assert [json.loads(g) for g in got if isinstance(g, bytes)] == [{"a": 1}, {"b": 2}]


def test_oversized_frames_are_errors_and_skipped() -> None:
    d = FrameDecoder(max_message=10)
    body = b"x" * 20
    got = d.feed(b"Content-Length: 20\r\n\r\n" + body + encode(b'{"ok":1}', "headers"))
    assert isinstance(got[0], FrameError)
    assert got[1] == b'{"ok":1}'
    d2 = FrameDecoder(max_message=10)
    got2 = d2.feed(b'{"aaaaaaaaaaaaaaaaaaaa": 1}')
    assert isinstance(got2[0], FrameError)
    assert d2.feed(b'"tail"}\n{"b":1}\n') == [b'{"b":1}']


def test_missing_content_length_is_an_error() -> None:
    d = FrameDecoder()
    got = d.feed(b"Content-Type: x\r\n\r\n")
    assert isinstance(got[0], FrameError)


def test_a_first_line_that_is_neither_json_nor_a_header_is_passed_on() -> None:
    # Passed on as a body: the server answers it with a parse error and reads on.
    for first in (b"hello\n", b"hello\r\n", b"  not json at all\n"):
        for step in (1, 4, 100):
            d = FrameDecoder()
            got = frames(d, first + encode(b'{"ok":1}', "headers"), step)
            assert got == [first.strip(), b'{"ok":1}'], (first, step)
            assert d.framing == "headers"
    d = FrameDecoder()
    assert d.feed(b'hello\n{"a":1}\n') == [b"hello", b'{"a":1}']
    assert d.framing == "lines"
