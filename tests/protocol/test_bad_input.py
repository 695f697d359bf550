"""Every request gets exactly one response, whatever the client sends."""

from __future__ import annotations

from pathlib import Path

from tests.support import RawSidecar

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


async def test_request_before_initialize_is_rejected(raw: RawSidecar) -> None:
    await raw.send({"jsonrpc": "2.0", "id": 7, "method": "session/list"})
    msg = await raw.response(7)
    assert msg["error"]["code"] == -32600
    assert msg["error"]["message"] == "not initialized"


async def test_invalid_json_gets_parse_error(raw: RawSidecar) -> None:
    await raw.send(INIT)
    await raw.response(1)
    await raw.send(b'{"jsonrpc": "2.0", "id": 2, "method": ')
    msg = await raw.read()
    assert msg["id"] is None
    assert msg["error"]["code"] == -32700
    # the connection still works afterwards
    await raw.send({"jsonrpc": "2.0", "id": 3, "method": "session/list"})
    assert "result" in await raw.response(3)


async def test_a_first_line_neither_json_nor_header_gets_parse_error(raw: RawSidecar) -> None:
    await raw.write(b"hello\n")
    msg = await raw.read()
    assert msg["id"] is None
    assert msg["error"]["code"] == -32700
    # later requests are answered
    await raw.send(INIT)
    assert (await raw.response(1))["result"]["protocolVersion"] == 1


async def test_unknown_method(raw: RawSidecar) -> None:
    await raw.send(INIT)
    await raw.response(1)
    await raw.send({"jsonrpc": "2.0", "id": 2, "method": "session/frobnicate", "params": {}})
    msg = await raw.response(2)
    assert msg["error"]["code"] == -32601


async def test_missing_params_and_empty_array_params_are_empty_objects(raw: RawSidecar) -> None:
    await raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize"})
    assert "result" in await raw.response(1)
    await raw.send({"jsonrpc": "2.0", "id": 2, "method": "session/list"})
    assert (await raw.response(2))["result"]["sessions"] == []
    await raw.send({"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": []})
    assert (await raw.response(3))["result"]["sessions"] == []


async def test_invalid_params_carry_pydantic_reasons(raw: RawSidecar) -> None:
    await raw.send(INIT)
    await raw.response(1)
    await raw.send(
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "relative/path"}}
    )
    msg = await raw.response(2)
    assert msg["error"]["code"] == -32602
    data = msg["error"]["data"]
    assert isinstance(data, list) and data[0]["loc"] == ["cwd"]
    assert "absolute" in data[0]["msg"]
    await raw.send(
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": 5}}
    )
    msg = await raw.response(3)
    assert msg["error"]["code"] == -32602
    assert {tuple(e["loc"]) for e in msg["error"]["data"]} >= {("sessionId",), ("prompt",)}


async def test_non_object_params_and_bad_envelopes(raw: RawSidecar) -> None:
    await raw.send(INIT)
    await raw.response(1)
    await raw.send({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": [1, 2]})
    assert (await raw.response(2))["error"]["code"] == -32602
    await raw.send({"jsonrpc": "1.0", "id": 3, "method": "session/list"})
    assert (await raw.response(3))["error"]["code"] == -32600
    await raw.send({"jsonrpc": "2.0", "id": 4})
    assert (await raw.response(4))["error"]["code"] == -32600
    await raw.send([{"jsonrpc": "2.0", "id": 5, "method": "session/list"}])
    msg = await raw.read()
    assert msg["id"] is None and msg["error"]["code"] == -32600
    await raw.send(b"42")
    msg = await raw.read()
    assert msg["error"]["code"] == -32600


async def test_unknown_session_is_32002(raw: RawSidecar) -> None:
    await raw.send(INIT)
    await raw.response(1)
    for i, method in enumerate(
        ["session/history", "session/interrupt", "session/resume", "session/close"], start=2
    ):
        await raw.send(
            {"jsonrpc": "2.0", "id": i, "method": method, "params": {"sessionId": "sess_nope"}}
        )
        assert (await raw.response(i))["error"]["code"] == -32002, method


async def test_newline_delimited_framing_is_answered_in_kind(raw: RawSidecar) -> None:
    await raw.send(INIT, framing="lines")
    msg = await raw.response(1)
    assert raw.framing == "lines"
    assert msg["result"]["protocolVersion"] == 1
    await raw.send({"jsonrpc": "2.0", "id": 2, "method": "session/list"}, framing="lines")
    assert (await raw.response(2))["result"] == {"sessions": []}


async def test_content_length_framing_is_answered_in_kind(raw: RawSidecar) -> None:
    await raw.send(INIT)
    await raw.response(1)
    assert raw.framing == "headers"


async def test_shutdown_then_exit_ends_with_code_0(raw: RawSidecar) -> None:
    await raw.send(INIT)
    await raw.response(1)
    await raw.send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    assert (await raw.response(2))["result"] is None
    await raw.send({"jsonrpc": "2.0", "id": 3, "method": "session/list"})
    assert (await raw.response(3))["error"]["code"] == -32600
    await raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert await raw.close() == 0


async def test_stdin_eof_exits_cleanly(raw: RawSidecar) -> None:
    await raw.send(INIT)
    await raw.response(1)
    assert await raw.close() == 0


async def test_logs_go_to_stderr_and_the_log_file(raw: RawSidecar, home: Path) -> None:
    await raw.send(INIT)
    await raw.response(1)
    await raw.close()
    assert b"serving" in raw.stderr
    log = (home / "logs" / "threadline.log").read_text()
    assert "serving" in log


async def test_oversized_frame_is_rejected_and_connection_survives(raw: RawSidecar) -> None:
    await raw.send(INIT)
    await raw.response(1)
    await raw.write(b"Content-Length: 60000000\r\n\r\n")
    msg = await raw.read()
    assert msg["error"]["code"] == -32600
    await raw.write(b" " * 60_000_000)
    await raw.send({"jsonrpc": "2.0", "id": 2, "method": "session/list"})
    assert "result" in await raw.response(2)
