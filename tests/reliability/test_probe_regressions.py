"""Regression tests for the faults an outside probe found (issue 13), one or more per
fault, each named after it; the docstring says what the sidecar used to do.
docs/reliability.md has the list and the figures."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.reliability.figures import record
from tests.reliability.invariants import structural_problems
from tests.reliability.test_protocol_regressions import INIT, started, until_barrier
from tests.support import (
    SERVER_COMMAND,
    RawSidecar,
    SidecarClient,
    scripted,
    sidecar_env,
    start_sidecar,
)
from tests.tools.fakes import FakeEditor, make_ctx
from threadline.tools import sandbox
from threadline.tools.workspace import ListDirectory, ReadFile, SearchText, search_text
from threadline_protocol.methods import HistoryResult

WINDOW = 8192
"""The scripted model's context window (tokens; it counts 4 characters a token)."""

OK = scripted([{"text": "ok"}])
TOOL = {"name": "big_tool", "inputSchema": {"type": "object"}}


async def history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


async def refused(client: SidecarClient, sid: str, text: str) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as err:
        await client.prompt(sid, text)
    return err.value


# -- 1. oversize input bricks a session ---------------------------------------------------


async def test_a_prompt_too_large_for_the_context_is_refused_before_it_is_stored(
    sidecar: SidecarClient,
) -> None:
    """The user message was committed before the size check, so the refused prompt was
    part of every later request: every later prompt answered -32013 too."""
    sid = await sidecar.new_session(model=OK)
    err = await refused(sidecar, sid, "word " * 200_000)  # 1 MB, ~250k tokens
    assert err.code == -32013, err
    assert err.data["size"] == WINDOW and err.data["used"] > WINDOW
    assert err.data["stored"] is False
    assert await history(sidecar, sid) == []
    assert (await sidecar.prompt(sid, "hello"))["stopReason"] == "end_turn"
    assert [m["role"] for m in await history(sidecar, sid)] == ["user", "assistant"]


def test_an_over_large_tool_result_reaches_the_model_cut_with_a_note() -> None:
    """What the model gets in place of a result too large for its context."""
    from threadline.engine.compiler import result_chars, to_chat_messages

    text = "y" * 100_000
    result = {
        "messageId": "m1",
        "turnId": "a1",
        "role": "tool",
        "content": [
            {"type": "tool_result", "toolUseId": "c1", "content": [{"type": "text", "text": text}]}
        ],
    }
    limit = result_chars(WINDOW)
    (whole,) = to_chat_messages([result])  # type: ignore[list-item]
    (cut,) = to_chat_messages([result], result_limit=limit)  # type: ignore[list-item]
    assert whole.content == text
    assert cut.content.startswith("y" * limit) and len(cut.content) < limit + 400
    assert "100000 characters" in cut.content and "session history" in cut.content


async def test_a_tool_result_larger_than_the_context_is_stored_whole_and_cut_for_the_model(
    sidecar: SidecarClient,
) -> None:
    """A client tool answering 2 MB of text: the result went into the next request
    whole, so the turn (and every later one) failed with -32013."""
    big = "".join(f"line {i:07d} of a very large tool result\n" for i in range(50_000))

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": big}]}

    sidecar.on_request("tool/call", answer)
    model = scripted([{"tool_call": {"name": "big_tool", "arguments": {}}}], [{"text": "done"}])
    sid = await sidecar.new_session(model=model, tools=[TOOL], builtinTools=False)
    assert (await sidecar.prompt(sid, "go"))["stopReason"] == "end_turn"
    messages = await history(sidecar, sid)
    stored = [b for m in messages for b in m["content"] if b["type"] == "tool_result"]
    assert [c["text"] for c in stored[0]["content"]] == [big], "stored whole"
    answer_after = [m for m in messages if m["role"] == "assistant"][-1]
    assert answer_after["content"] == [{"type": "text", "text": "done"}]
    assert answer_after["usage"]["inputTokens"] <= WINDOW, "the model got it cut"
    assert (await sidecar.prompt(sid, "again"))["stopReason"] == "end_turn"
    assert structural_problems(await history(sidecar, sid)) == []


async def test_tool_results_that_overflow_the_context_in_one_turn_are_compacted_not_failed(
    sidecar: SidecarClient,
) -> None:
    """Four results that each fit but together do not: auto-compaction found "nothing
    old enough" (one turn) and the turn failed with -32013, and so did every later one."""
    chunk = "x" * 7000  # under the cut, ~1750 tokens each

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": chunk + params["toolCallId"]}]}

    sidecar.on_request("tool/call", answer)
    calls = [{"tool_call": {"name": "big_tool", "arguments": {"n": i}}} for i in range(5)]
    model = scripted(calls, [{"text": "done"}])
    sid = await sidecar.new_session(model=model, tools=[TOOL], builtinTools=False)
    assert (await sidecar.prompt(sid, "go"))["stopReason"] in ("end_turn", "max_turn_requests")
    messages = await history(sidecar, sid)
    assert any(m["content"][0]["type"] == "summary" for m in messages)
    assert structural_problems(messages) == []
    assert (await sidecar.prompt(sid, "next"))["stopReason"] == "end_turn"


async def test_compaction_brings_back_a_session_whose_one_turn_is_too_large(
    sidecar: SidecarClient,
) -> None:
    """With auto-compaction off, a second large prompt is refused (nothing stored); the
    advice is to compact, but compaction kept the large task message verbatim (or found
    "nothing old enough"), so the prompt was refused for ever."""
    sid = await sidecar.new_session(model=OK, autoCompact=False)
    large = "word " * 4000  # ~5000 tokens: fits alone, not twice
    assert (await sidecar.prompt(sid, large))["stopReason"] == "end_turn"
    err = await refused(sidecar, sid, large)
    assert err.code == -32013 and err.data["stored"] is False
    assert "session/compact" in err.message
    result = await sidecar.call("session/compact", {"sessionId": sid, "keepTurns": 0})
    assert result["_meta"]["threadline"]["compacted"] is True, result
    # The large task is summarised, not kept: what is left is the system prompt, the
    # default tools' specs and a short summary, a small part of what was there.
    assert result["tokensAfter"] < result["tokensBefore"] / 3, result
    assert (await sidecar.prompt(sid, large))["stopReason"] == "end_turn"


def test_compaction_plan_keeps_fewer_turns_and_no_task_when_nothing_else_fits() -> None:
    """The plan kept the first user message verbatim whatever its size."""
    from threadline.engine.compaction import plan

    def msg(i: int, role: str) -> dict[str, Any]:
        return {"messageId": f"m{i}", "turnId": "t", "role": role, "content": []}

    working: list[Any] = [msg(0, "user"), msg(1, "assistant"), msg(2, "user"), msg(3, "assistant")]
    # only a plan that keeps nothing fits
    cut = plan(working, 2, "m0", lambda kept: not kept)
    assert cut is not None and cut.keep_ids == () and len(cut.summarize) == 4
    # nothing old enough, but it all fits: no compaction
    assert plan(working, 2, "m0", lambda kept: True) is None
    assert plan(working, 2, "m0") is None


# -- 4. one answer per request, even for lone surrogates ------------------------------------

SURROGATE_PARAMS: dict[str, dict[str, Any]] = {
    # synchronous handlers
    "session/new": {"cwd": ["\ud800"], "mcpServers": []},
    "session/history": {"sessionId": ["\ud800"]},
    "session/load": {"sessionId": {"k": "\udfff"}, "cwd": "/tmp", "mcpServers": []},
    "session/list": {"cursor": ["\ud800"]},
    "session/fork": {"sessionId": ["x\ud800"]},
    # asynchronous handlers (answered from their own task)
    "session/prompt": {"sessionId": "s", "prompt": "\ud800"},
    "session/interrupt": {"sessionId": ["\ud800"]},
    "session/compact": {"sessionId": "s", "keepTurns": "\ud800"},
    "session/close": {"sessionId": ["\ud800"]},
    "session/delete": {"sessionId": ["\udbff"]},
}


async def test_invalid_params_quoting_a_lone_surrogate_get_one_invalid_params_answer(
    raw: RawSidecar,
) -> None:
    """pydantic's JSON encoder raised on the surrogate it quoted in the -32602 answer:
    synchronous handlers answered -32603, asynchronous ones sent nothing at all."""
    await started(raw)
    for i, (method, params) in enumerate(SURROGATE_PARAMS.items()):
        await raw.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
    seen: list[dict[str, Any]] = []
    with contextlib.suppress(TimeoutError):  # async answers may follow a barrier
        while {m.get("id") for m in seen} != set(range(len(SURROGATE_PARAMS))):
            msg = await raw.read(timeout=10)
            if "method" not in msg:
                seen.append(msg)
    seen += await until_barrier(raw, "after")
    for i, method in enumerate(SURROGATE_PARAMS):
        answers = [m for m in seen if m.get("id") == i]
        assert len(answers) == 1, f"{method}: {answers}"
        error = answers[0]["error"]
        assert error["code"] == -32602, f"{method}: {error}"
        assert isinstance(error["data"], list) and error["data"][0]["loc"], error
    assert len(seen) == len(SURROGATE_PARAMS), seen
    assert b"Traceback" not in raw.stderr


def test_an_answer_that_cannot_be_encoded_still_answers_its_request() -> None:
    """The outbox logged a message it could not serialise and dropped it: a request
    left without an answer."""
    import io
    import json

    from threadline.rpc.outbox import Outbox

    out = io.BytesIO()
    outbox = Outbox(out)
    outbox.framing = "lines"
    outbox.send({"jsonrpc": "2.0", "id": 7, "result": {"bad": object()}})
    outbox.close()
    (answer,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert answer["id"] == 7 and answer["error"]["code"] == -32603


# -- 8. symlink swap race ---------------------------------------------------------------------

RENAME_EXCHANGE = 2


SWAP_LOOP = """
import ctypes, os, sys
renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
a, b = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
while True:
    renameat2(-100, a, -100, b, 2)  # AT_FDCWD, RENAME_EXCHANGE
"""


class Swapper:
    """Swaps ``ws/d`` (a real directory) with ``ws/swap`` (a symlink to outside) with
    ``renameat2(RENAME_EXCHANGE)`` as fast as it can, in a process of its own (a
    thread would take turns with the tools under the GIL and rarely hit the window)."""

    def __init__(self, ws: Path) -> None:
        self._args = [sys.executable, "-c", SWAP_LOOP, str(ws / "d"), str(ws / "swap")]
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Swapper:
        self._proc = subprocess.Popen(self._args)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None
        self._proc.kill()
        self._proc.wait()


def race_workspace(tmp: Path) -> Path:
    ws, outside = tmp / "ws", tmp / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (ws / "d" / "f.txt").write_text("INSIDE\n")
    (outside / "f.txt").write_text("SECRET\n")
    (outside / "only_outside.txt").write_text("SECRET\n")
    (ws / "swap").symlink_to(outside, target_is_directory=True)
    return ws


async def count_escapes(ws: Path) -> dict[str, list[int]]:
    """Per tool: [calls that returned outside content, calls, calls that showed the
    inside directory, calls that raised instead of answering]."""
    ctx = make_ctx(ws, FakeEditor())
    plan: list[tuple[str, Any, dict[str, Any], int]] = [
        ("read_file", ReadFile(), {"path": "d/f.txt"}, 300),
        ("list_directory", ListDirectory(), {"path": "d"}, 100),
        ("search_text", SearchText(), {"pattern": "SECRET|INSIDE", "path": "d"}, 100),
    ]
    counts: dict[str, list[int]] = {}
    with Swapper(ws):
        await asyncio.sleep(0.2)  # let it start swapping
        for name, tool, args, n in plan:
            escaped = inside = raised = 0
            for _ in range(n):
                try:
                    outcome = await tool.run(args, ctx)
                except OSError:  # realpath's readlink on what became a directory
                    raised += 1
                    continue
                text = json.dumps(outcome.content)
                escaped += "SECRET" in text or "only_outside" in text
                inside += "INSIDE" in text or "f.txt (7 B)" in text
            counts[name] = [escaped, n, inside, raised]
    return counts


def exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


@pytest.fixture(params=[True, False], ids=["openat2", "openat-walk"])
def open_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if not request.param:
        monkeypatch.setattr(sandbox.OPENAT2, "available", False)
    elif not sandbox.OPENAT2.available:
        pytest.skip("this kernel has no openat2")
    return "openat2" if request.param else "openat walk"


async def test_a_directory_swapped_for_a_symlink_between_check_and_use_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_mode: str
) -> None:
    """Paths were checked with realpath and then opened by name, so a directory
    swapped for a symlink to outside in between (renameat2 RENAME_EXCHANGE) was
    followed. Here the swap lands exactly in that window, every time."""
    ws = race_workspace(tmp_path)
    resolve = sandbox.Sandbox.resolve

    def resolve_then_swap(self: sandbox.Sandbox, raw: object, **kw: Any) -> sandbox.Resolved:
        resolved = resolve(self, raw, **kw)
        exchange(ws / "d", ws / "swap")  # d is now the link to outside
        return resolved

    monkeypatch.setattr(sandbox.Sandbox, "resolve", resolve_then_swap)
    ctx = make_ctx(ws, FakeEditor())
    escaped: dict[str, int] = {}
    for tool, args in [
        (ReadFile(), {"path": "d/f.txt"}),
        (ListDirectory(), {"path": "d"}),
        (SearchText(), {"pattern": "SECRET|INSIDE", "path": "d"}),
    ]:
        escaped[tool.name] = 0
        for _ in range(20):
            outcome = await tool.run(args, ctx)
            exchange(ws / "d", ws / "swap")  # back to the real directory
            text = json.dumps(outcome.content)
            escaped[tool.name] += "SECRET" in text or "only_outside" in text
            assert outcome.is_error and "symlink appeared" in text, text
    record("symlink swapped between check and use", mode=open_mode, calls=60, **escaped)
    assert sum(escaped.values()) == 0, escaped


async def test_a_directory_swapped_for_a_symlink_mid_call_never_leaks_outside_content(
    tmp_path: Path, open_mode: str
) -> None:
    """The same race run free: another process swaps the directory as fast as it can
    while the tools read (36-81 of 300 read_file, 7-22 of 100 list_directory and 22-44
    of 100 search_text calls returned outside content on an idle machine)."""
    ws = race_workspace(tmp_path)
    counts = await count_escapes(ws)
    record("symlink swap race", mode=open_mode, **counts)
    assert all(escaped == 0 and raised == 0 for escaped, _, _, raised in counts.values()), counts


# -- 7. passwords in provider URLs --------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PASSWORD = "Pa55word-9f3e2d"


@pytest.fixture
def proxied(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A provider behind ``http://probe:PASSWORD@…`` (a closed port), DEBUG logging."""
    url = f"http://probe:{PASSWORD}@127.0.0.1:{closed_port()}/v1"
    config = tmp_path / "threadline.toml"
    config.write_text(
        f'[providers.proxy]\ntype = "openai"\nbase_url = "{url}"\n'
        '[models.behind]\nprovider = "proxy"\nmodel = "m"\n'
    )
    monkeypatch.setenv("THREADLINE_CONFIG", str(config))
    monkeypatch.setenv("THREADLINE_HOME", str(home))
    monkeypatch.setenv("THREADLINE_LOG_LEVEL", "DEBUG")


@pytest.mark.usefixtures("proxied")
def test_threadline_models_does_not_print_a_password_in_a_provider_url() -> None:
    """`threadline models` printed ``http://user:PASSWORD@127.0.0.1…`` as the endpoint."""
    shown = ""
    for args in (["models"], ["models", "--json"]):
        done = subprocess.run(
            [sys.executable, "-m", "threadline", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        shown += done.stdout + done.stderr
    assert PASSWORD not in shown
    assert "http://***@127.0.0.1" in shown


@pytest.mark.usefixtures("proxied")
async def test_a_password_in_a_provider_url_is_not_logged_or_answered(home: Path) -> None:
    """A guard beside the fix above: errors and log lines (DEBUG included) may quote
    the URL a request went to (this path did not leak when the probe ran)."""
    client = await start_sidecar(home)
    try:
        sid = await client.new_session(model="behind")
        with pytest.raises(JsonRpcException) as err:
            await client.prompt(sid, "hello")
        shown = json.dumps([err.value.message, err.value.data, client.updates])
    finally:
        await client.stop()
    shown += client.stderr.decode(errors="replace")
    shown += "".join(p.read_text(errors="replace") for p in (home / "logs").iterdir())
    assert PASSWORD not in shown


def test_log_lines_quoting_a_url_with_a_password_are_redacted() -> None:
    """Every handler the sidecar logs through redacts URL userinfo, tracebacks too."""
    import io
    import logging

    from threadline.redact import RedactingFilter, redact_urls

    assert redact_urls("GET https://u:p@ss@host:1/x?q=a@b") == "GET https://***@host:1/x?q=a@b"
    assert redact_urls("see http://host/a@b") == "see http://host/a@b"
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RedactingFilter())
    log = logging.getLogger("threadline.test.redact")
    log.addHandler(handler)
    try:
        log.warning("calling %s", f"http://user:{PASSWORD}@127.0.0.1:9/v1")
        try:
            raise ConnectionError(f"cannot reach http://user:{PASSWORD}@127.0.0.1:9/v1")
        except ConnectionError:
            log.exception("failed")
    finally:
        log.removeHandler(handler)
    assert PASSWORD not in out.getvalue()
    assert "ConnectionError: cannot reach http://***@127.0.0.1:9/v1" in out.getvalue()


# -- 6. tool/call answers are validated ----------------------------------------------------------

INVALID_TOOL_ANSWERS: list[Any] = [
    {"content": [{"type": "text", "text": 5}]},
    {"content": [{"type": "text", "text": "fine"}], "isError": "no"},
    {"content": [{"type": "image", "data": "x"}]},  # no mimeType
    {"content": "plain string"},
    None,
]


async def tool_result_for(
    sidecar: SidecarClient, answer: Any
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One turn whose client tool the editor answers with `answer`: the stored history
    and the call's one stored result."""

    async def reply(params: dict[str, Any]) -> Any:
        return answer

    sidecar.on_request("tool/call", reply)
    model = scripted([{"tool_call": {"name": "big_tool", "arguments": {}}}], [{"text": "done"}])
    sid = await sidecar.new_session(model=model, tools=[TOOL], builtinTools=False)
    assert (await sidecar.prompt(sid, "go"))["stopReason"] == "end_turn"
    messages = await history(sidecar, sid)
    (result,) = [b for m in messages for b in m["content"] if b["type"] == "tool_result"]
    return messages, result


@pytest.mark.parametrize("answer", INVALID_TOOL_ANSWERS, ids=lambda a: json.dumps(a)[:40])
async def test_an_invalid_tool_call_answer_fails_the_call_and_stores_nothing_invalid(
    sidecar: SidecarClient, answer: Any
) -> None:
    """``{"type":"text","text":5}`` was stored in the history as is, and ``isError:
    "no"`` counted as an error (``bool("no")``)."""

    messages, result = await tool_result_for(sidecar, answer)
    assert result["isError"] is True and result["status"] == "failed", result
    (block,) = result["content"]
    assert block["type"] == "text" and "not valid" in block["text"], block
    assert structural_problems(messages) == []
    HistoryResult.model_validate({"messages": messages})


async def test_a_valid_tool_call_answer_is_stored_as_sent(sidecar: SidecarClient) -> None:
    """The control: a valid answer, ``isError: false`` and an extra key kept."""
    sent = {"content": [{"type": "text", "text": "fine", "_meta": {"k": 1}}], "isError": False}

    _, result = await tool_result_for(sidecar, sent)
    assert result["isError"] is False and result["content"] == sent["content"]


# -- 9. a client that closes the server's stdout ------------------------------------------------


class LineClient:
    """A newline-delimited JSON-RPC client on raw pipes, so the test can close the
    server's stdout while keeping its stdin open."""

    def __init__(self, home: Path, stderr: Path) -> None:
        self._err = stderr.open("wb")
        self.proc = subprocess.Popen(
            SERVER_COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=sidecar_env(home),
        )
        self._buf = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self, timeout: float = 30) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("no message from the sidecar")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError("the sidecar closed its stdout")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def until(self, pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while True:
            msg = self.read()
            if pred(msg):
                return msg

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._err.close()


def test_a_client_that_closes_the_servers_stdout_ends_it_after_committing(
    tmp_path: Path, home: Path
) -> None:
    """The server noticed a closed stdout only when a write failed, and then only
    dropped output: with stdin still open it stayed alive for ever, and a pending
    permission request stayed open."""
    client = LineClient(home, tmp_path / "stderr")
    try:
        client.send({**INIT, "id": 1})
        client.until(lambda m: m.get("id") == 1)
        tool = {**TOOL, "needsApproval": True}
        model = scripted([{"tool_call": {"name": "big_tool", "arguments": {}}}], [{"text": "ok"}])
        params = {
            "cwd": str(tmp_path),
            "mcpServers": [],
            "_meta": {"threadline": {"model": model, "tools": [tool], "builtinTools": False}},
        }
        client.send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": params})
        sid = client.until(lambda m: m.get("id") == 2)["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        client.send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt})
        client.until(lambda m: m.get("method") == "session/request_permission")
        assert client.proc.stdout is not None
        client.proc.stdout.close()  # stdin stays open
        started = time.monotonic()
        try:
            code = client.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("the sidecar kept running with its stdout closed")
        record("stdout closed", seconds=round(time.monotonic() - started, 2), exit_code=code)
    finally:
        client.close()
    assert "Traceback" not in (tmp_path / "stderr").read_text(errors="replace")
    asyncio.run(check_after_restart(home, sid))


async def check_after_restart(home: Path, sid: str) -> None:
    """The open call has its cancelled result, and the session takes a prompt."""
    client = await start_sidecar(home)
    try:
        messages = await history(client, sid)
        (result,) = [b for m in messages for b in m["content"] if b["type"] == "tool_result"]
        assert result["status"] == "cancelled", result
        assert structural_problems(messages) == []

        async def refuse(params: dict[str, Any]) -> dict[str, Any]:
            return {"outcome": {"outcome": "cancelled"}}

        client.on_request("session/request_permission", refuse)
        assert (await client.prompt(sid, "again"))["stopReason"] == "end_turn"
    finally:
        await client.stop()


# -- 11. a clean stop logs nothing alarming -----------------------------------------------------

FLOOD = b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":99}}\n' * 50


def stop_while_flooded(home: Path, how: str) -> tuple[float, str]:
    """Stop a sidecar (``exit`` or SIGTERM) while the client keeps writing; returns the
    seconds the stop took (inf: it did not exit) and the sidecar's stderr."""
    stderr = home.parent / f"stderr-{how}"
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            SERVER_COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=sidecar_env(home),
        )
        assert proc.stdin is not None
        stdin = proc.stdin
        lock = threading.Lock()
        stop = threading.Event()

        def write(data: bytes) -> bool:
            with lock:
                try:
                    stdin.write(data)
                    stdin.flush()
                except (OSError, ValueError):
                    return False
            return True

        def flood() -> None:
            while not stop.is_set() and write(FLOOD):
                pass

        write(json.dumps({**INIT, "id": 1}).encode() + b"\n")
        writer = threading.Thread(target=flood, daemon=True)
        writer.start()
        time.sleep(1.0)
        started = time.monotonic()
        if how == "exit":
            write(b'{"jsonrpc":"2.0","method":"exit"}\n')
        else:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
            took = time.monotonic() - started
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            took = float("inf")
        stop.set()
        writer.join(5)
    return took, stderr.read_text(errors="replace")


def test_a_stop_while_the_client_writes_logs_no_event_loop_is_closed(tmp_path: Path) -> None:
    """The stdin reader thread handed frames to an event loop that had just closed:
    "RuntimeError: Event loop is closed" (2 of 8 stops from VS Code). And with no
    backpressure, an ``exit`` queued behind a backlog of frames took seconds to act."""
    times: list[float] = []
    for i, how in enumerate(["exit", "sigterm"] * 3):
        took, stderr = stop_while_flooded(tmp_path / f"home{i}", how)
        assert "Traceback" not in stderr and "Event loop is closed" not in stderr, stderr
        assert took < 10, f"{how}: the sidecar did not stop"
        times.append(round(took, 2))
    record("stop while the client writes", stops=len(times), seconds=times)


# -- 5. an unwritable data folder ---------------------------------------------------------------


def serve_command(home: Path, case: str) -> list[str]:
    """``threadline serve`` with ``home`` unwritable in the way ``case`` says."""
    serve = [sys.executable, "-m", "threadline", "serve"]
    root = os.geteuid() == 0
    if case == "read_only":
        home.mkdir()
        if not root:
            home.chmod(0o500)
            return serve
        if shutil.which("unshare") is None:
            pytest.skip("needs unshare for a read-only mount")
        mount = f"mount --bind -o ro {shlex.quote(str(home))} {shlex.quote(str(home))}"
        return ["unshare", "-m", "sh", "-c", f"{mount} && exec {shlex.join(serve)}"]
    if case == "not_permitted":
        home.parent.chmod(0o755)
        home.mkdir(mode=0o755)
        if not root:
            home.chmod(0o500)
            return serve
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv to run as another user")
        return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *serve]
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["under_a_file", "read_only", "not_permitted"])
def test_an_unwritable_home_is_one_line_and_exit_code_2(tmp_path: Path, case: str) -> None:
    """A read-only or foreign THREADLINE_HOME exited 1 after a raw PermissionError
    traceback from the log set-up."""
    if case == "under_a_file":
        (tmp_path / "file").write_text("")
        home = tmp_path / "file" / "home"
        command = [sys.executable, "-m", "threadline", "serve"]
    else:
        home = tmp_path / "home"
        command = serve_command(home, case)
    done = subprocess.run(
        command,
        env=sidecar_env(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.stderr.startswith(("unshare:", "mount:")):
        pytest.skip(f"no read-only bind mount here: {done.stderr.strip()}")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("threadline: cannot write to the data folder "), lines
    assert str(home) in lines[0] and "THREADLINE_HOME" in lines[0], lines


# -- 10. search_text limits and late NUL bytes ----------------------------------------------------


async def test_search_text_says_it_stopped_at_the_file_limit_not_the_result_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hitting the file-count limit was reported as "stopped at the result limit"."""
    monkeypatch.setattr(search_text, "SEARCH_MAX_FILES", 5)
    for i in range(12):
        (tmp_path / f"f{i:02d}.txt").write_text("needle\n" if i == 0 else "hay\n")
    outcome = await SearchText().run({"pattern": "needle"}, make_ctx(tmp_path, FakeEditor()))
    text = outcome.content[0]["text"]
    assert "result limit" not in text, text
    assert "after searching 5 files (the file limit)" in text, text
    assert outcome.raw_output["truncated"] is True


async def test_a_file_with_a_nul_after_the_first_8_kib_is_treated_as_binary(
    tmp_path: Path,
) -> None:
    """Only the first 8 KiB were sniffed, so such a file came back with raw control
    characters from search_text and read_file."""
    (tmp_path / "late.bin").write_bytes(b"needle\n" + b"a" * 9000 + b"\n\x00\x1b[31mneedle\x07\n")
    ctx = make_ctx(tmp_path, FakeEditor())
    found = await SearchText().run({"pattern": "needle"}, ctx)
    text = found.content[0]["text"]
    assert "No matches" in text and "1 binary" in text, text
    read = await ReadFile().run({"path": "late.bin"}, ctx)
    assert read.is_error and "binary" in read.content[0]["text"], read
    assert not any(ch in json.dumps(read.content) for ch in ("\\u0000", "\\u001b", "\\u0007"))


async def test_initialize_with_a_lone_surrogate_in_client_capabilities_is_answered(
    raw: RawSidecar,
) -> None:
    """Found by the fuzzer once its strings included lone surrogates: the capabilities
    were dumped in pydantic's JSON mode, which raised, and initialize answered -32603."""
    caps = {"fs": {"readTextFile": True}, "": {"\ud800": None}}  # the fuzzer's example
    params = {"protocolVersion": 1, "clientCapabilities": caps}
    await raw.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params})
    answer = await raw.response("init")
    assert "result" in answer, answer
    caps = {"x\ud800": {}}  # a key pydantic refuses: invalid params, not an internal error
    params = {"protocolVersion": 1, "clientCapabilities": caps}
    await raw.send({"jsonrpc": "2.0", "id": "again", "method": "initialize", "params": params})
    assert (await raw.response("again"))["error"]["code"] == -32602
    await raw.send({"jsonrpc": "2.0", "id": "l", "method": "session/list"})
    assert "result" in await raw.response("l")


async def test_session_list_filtered_by_a_cwd_with_a_lone_surrogate_is_answered(
    raw: RawSidecar,
) -> None:
    """Found by the fuzzer once its strings included lone surrogates: sqlite3 cannot
    bind such a str, so ``session/list`` with that ``cwd`` (or cursor) answered -32603.
    The store keeps such a cwd with U+FFFD, so the same filter finds the session."""
    await started(raw)
    new = {"cwd": "/tmp/\ud800", "mcpServers": []}
    await raw.send({"jsonrpc": "2.0", "id": "new", "method": "session/new", "params": new})
    sid = (await raw.response("new"))["result"]["sessionId"]
    for i, params in enumerate([{"cwd": "/tmp/\ud800"}, {"cursor": "\ud800|x"}]):
        await raw.send({"jsonrpc": "2.0", "id": i, "method": "session/list", "params": params})
        answer = await raw.response(i)
        if "cwd" in params:
            assert [s["sessionId"] for s in answer["result"]["sessions"]] == [sid]
        else:  # not a cursor this sidecar gave: a clear -32602, never -32603
            assert answer["error"]["code"] == -32602, answer
            assert "list again from the first page" in answer["error"]["message"]
