"""Regression tests for the protocol faults the fuzzer found, one per fault, each
named after it; the docstring says what the sidecar used to do. (They were strict
xfails until the fixes of commits 5c52c83 and f77b63f; docs/reliability.md has the
list.)"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from tests.support import RawSidecar, scripted

INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": 1}}


async def started(raw: RawSidecar) -> None:
    await raw.send(INIT)
    assert "result" in await raw.response("init")


async def until_barrier(raw: RawSidecar, barrier: str, timeout: float = 10) -> list[dict[str, Any]]:
    """Send a valid request and return every answer that came before its own."""
    await raw.send({"jsonrpc": "2.0", "id": barrier, "method": "session/list"})
    seen: list[dict[str, Any]] = []
    while True:
        msg = await raw.read(timeout)
        if "method" in msg:
            continue
        if msg.get("id") == barrier:
            assert "result" in msg, msg
            return seen
        seen.append(msg)


def one_answer(seen: list[dict[str, Any]], msg_id: Any) -> dict[str, Any]:
    """The single answer to ``msg_id``: its own id, or an id-null parse/request error."""
    nulls = [m for m in seen if m.get("id") is None]
    mine = [m for m in seen if m.get("id") == msg_id] if msg_id is not None else []
    assert len(mine) + len(nulls) == 1, f"expected exactly one answer, got {seen}"
    return (mine or nulls)[0]


async def test_integer_id_over_4300_digits_is_answered(raw: RawSidecar) -> None:
    """json.loads raised ValueError (Python's 4300-digit limit), which escaped the frame
    handler: no answer at all."""
    await started(raw)
    big = "9" * 5000
    await raw.send(b'{"jsonrpc":"2.0","id":' + big.encode() + b',"method":"session/list"}')
    await asyncio.sleep(0.3)  # its own read, so only this frame is at stake
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # so this client can read the id if it is echoed
    try:
        seen = await until_barrier(raw, "after")
    finally:
        sys.set_int_max_str_digits(limit)
    assert len(seen) == 1, f"expected exactly one answer, got {len(seen)}"
    answer = seen[0]
    echoed = str(answer.get("id")) == big
    assert echoed or answer["error"]["code"] in (-32700, -32600), answer


async def test_json_nested_deeper_than_the_parser_limit_is_answered(raw: RawSidecar) -> None:
    """json.loads raised RecursionError, which escaped the frame handler: no answer."""
    await started(raw)
    deep = b"[" * 100_000 + b"]" * 100_000
    await raw.send(b'{"jsonrpc":"2.0","id":5,"method":"session/list","params":{"cursor":' + deep)
    await asyncio.sleep(0.3)
    answer = one_answer(await until_barrier(raw, "after"), 5)
    assert answer["error"]["code"] in (-32700, -32600, -32602)


async def test_request_after_an_unparseable_frame_in_the_same_write_is_answered(
    raw: RawSidecar,
) -> None:
    """The escaping exception also dropped every later frame of the same read, so a valid
    request pipelined after a bad one was never answered."""
    await started(raw)
    bad = b'{"jsonrpc":"2.0","id":' + b"1" * 5000 + b',"method":"session/list"}'
    good = json.dumps({"jsonrpc": "2.0", "id": "good", "method": "session/list"}).encode()
    frames = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in (bad, good))
    await raw.write(frames)  # one write: the server reads both frames at once
    answer = await raw.response("good", timeout=3)
    assert "result" in answer


async def test_lone_surrogate_in_request_id_is_answered(raw: RawSidecar) -> None:
    """The answer echoing a lone surrogate could not be encoded as UTF-8 and was dropped."""
    await started(raw)
    await raw.send(b'{"jsonrpc":"2.0","id":"x\\ud800","method":"session/list"}')
    answer = one_answer(await until_barrier(raw, "after"), "x\ud800")
    assert answer.get("id") == "x\ud800" and "result" in answer


async def test_lone_surrogate_in_method_name_is_answered(raw: RawSidecar) -> None:
    """The -32601 answer quoting the method could not be encoded and was dropped."""
    await started(raw)
    await raw.send(b'{"jsonrpc":"2.0","id":9,"method":"x\\udfff"}')
    answer = one_answer(await until_barrier(raw, "after"), 9)
    assert answer["error"]["code"] == -32601


async def _new_session(raw: RawSidecar, model: str, **extra: Any) -> str:
    params = {
        "cwd": "/tmp",
        "mcpServers": [],
        "_meta": {"threadline": {"model": model, **extra}},
    }
    await raw.send({"jsonrpc": "2.0", "id": "new", "method": "session/new", "params": params})
    return (await raw.response("new"))["result"]["sessionId"]


async def send_prompt(raw: RawSidecar, sid: str, text: str) -> None:
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    await raw.send({"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": params})


async def test_lone_surrogate_in_prompt_text_is_stored_or_refused(raw: RawSidecar) -> None:
    """sqlite3 cannot bind a str with a lone surrogate: the turn failed with -32603."""
    await started(raw)
    sid = await _new_session(raw, "scripted:echo")
    await send_prompt(raw, sid, "a\ud800b")  # json.dumps writes it as an escape
    answer = await raw.response("p")
    assert "result" in answer or answer["error"]["code"] == -32602, answer


async def test_lone_surrogate_in_model_tool_arguments_does_not_fail_the_turn(
    raw: RawSidecar,
) -> None:
    """A model (or an upstream that splits a surrogate pair) can produce this; the tool
    call could not be stored and the turn failed with -32603. The sandbox must refuse
    the path instead."""
    await started(raw)
    model = scripted(
        [{"tool_call": {"name": "read_file", "arguments": {"path": "src/\ud800.py"}}}],
        [{"text": "done"}],
    )
    sid = await _new_session(raw, model)
    await send_prompt(raw, sid, "read it")
    answer = await raw.response("p")
    assert answer.get("result", {}).get("stopReason") == "end_turn", answer


async def test_message_without_jsonrpc_and_id_gets_invalid_request(raw: RawSidecar) -> None:
    """An object with neither ``"jsonrpc": "2.0"`` nor an id was dropped silently;
    JSON-RPC 2.0 (and docs/protocol.md: one answer per request) wants -32600 with id null."""
    await started(raw)
    await raw.send({"foo": "boo"})
    answer = one_answer(await until_barrier(raw, "after"), None)
    assert answer["error"]["code"] == -32600


async def test_error_answer_with_non_integer_code_still_ends_the_tool_call(
    raw: RawSidecar,
) -> None:
    """``int(code)`` raised on a client error whose code is not an int: the server request
    was never resolved (a tool call hung until its timeout, a permission wait for ever)
    and the server answered the response with -32603."""
    await started(raw)
    model = scripted([{"tool_call": {"name": "t", "arguments": {}}}], [{"text": "done"}])
    tool = {"name": "t", "inputSchema": {"type": "object"}, "timeout": 60}
    sid = await _new_session(raw, model, tools=[tool])
    await send_prompt(raw, sid, "go")
    replies_to_responses: list[dict[str, Any]] = []
    answer: dict[str, Any] | None = None
    while answer is None:
        msg = await raw.read(timeout=4)
        if msg.get("method") == "tool/call":
            await raw.send(
                {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": "E42", "message": "no"}}
            )
        elif "method" not in msg and msg.get("id") == "p":
            answer = msg
        elif "method" not in msg:
            replies_to_responses.append(msg)
    assert answer["result"]["stopReason"] == "end_turn"
    assert replies_to_responses == [], "the server answered a response"


async def test_cancel_request_with_unhashable_id_is_not_answered(raw: RawSidecar) -> None:
    """A list or object id raised TypeError in the task lookup, answered -32603 with id
    null; a notification must never be answered."""
    await started(raw)
    await raw.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": [1]}})
    assert await until_barrier(raw, "after") == []


async def test_a_log_line_quoting_a_lone_surrogate_is_written(raw: RawSidecar, home: Path) -> None:
    """The log file was opened with errors='strict': a line quoting a lone surrogate from
    the wire printed '--- Logging error ---' and a traceback to stderr and was lost."""
    await started(raw)
    await raw.send(b'{"jsonrpc":"2.0","id":"stray-\\ud800","result":null}')
    await until_barrier(raw, "after")
    await raw.close()
    assert b"Logging error" not in raw.stderr, raw.stderr.decode("utf-8", "replace")[-2000:]
    assert "stray-" in (home / "logs" / "threadline.log").read_text(errors="replace")
