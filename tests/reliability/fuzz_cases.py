"""What the protocol fuzzer sends, and what the contract says must come back.

Hypothesis draws *specs* (plain data, so it can shrink them); the runner turns each
spec into bytes with fresh, unique ids and an :class:`Expect` that states the
contract (docs/protocol.md and JSON-RPC 2.0) for that message:

* a request is answered exactly once, with its own id, with a code of the right
  family (-32601 for unknown methods, -32602/-32002/-32010 for bad params of known
  ones, never -32603);
* a body that is not JSON gets one -32700 with ``id: null``; JSON that is not a request
  object gets one -32600 with ``id: null``;
* a notification, a cancel for an unknown id, or a stray response gets nothing.

``FOUND`` names the regression tests of the faults these generators found (each in
``test_protocol_regressions.py``, all fixed since): their inputs stay in the generators.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from threadline_protocol.methods import METHODS

FOUND = (
    "test_integer_id_over_4300_digits_is_answered",
    "test_json_nested_deeper_than_the_parser_limit_is_answered",
    "test_request_after_an_unparseable_frame_in_the_same_write_is_answered",
    "test_lone_surrogate_in_request_id_is_answered",
    "test_lone_surrogate_in_method_name_is_answered",
    "test_lone_surrogate_in_prompt_text_is_stored_or_refused",
    "test_a_log_line_quoting_a_lone_surrogate_is_written",
    "test_message_without_jsonrpc_and_id_gets_invalid_request",
    "test_error_answer_with_non_integer_code_still_ends_the_tool_call",
    "test_cancel_request_with_unhashable_id_is_not_answered",
)
"""Regression tests of the faults these generators found (all fixed since)."""

PARSER_DEPTH = 900
"""Nesting the server parses and answers by id; deeper (the recursion limit is near
990) it may refuse the frame as unparseable, with ``id: null``."""
HUGE_INT = 10**5000
"""An id the default ``int`` conversion limit of 4300 digits rejects."""

NEVER_SENT = ("shutdown", "exit")
"""``shutdown`` makes the server refuse everything after it and ``exit`` ends it: they
are tested on their own, not fuzzed into a long-lived server."""
KNOWN_METHODS = tuple(
    name
    for name, spec in METHODS.items()
    if spec.direction == "client_to_server" and spec.kind == "request" and name not in NEVER_SENT
)
"""The protocol's requests from the client (its table, ``METHODS``), fuzzed."""

LIVE = "$LIVE"
"""Placeholder for the id of the session the fuzz test keeps alive (scripted:echo)."""
MISSING = "$MISSING"
"""Placeholder for a session id that does not exist."""

PARAM_CODES = frozenset({-32602, -32002, -32010})


# -- specs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """One message to send, before ids are assigned."""

    kind: str
    method: str | None = None
    params: Any = None
    data: bytes = b""
    id_shape: str = "str"
    odd_id: Any = None
    value: Any = None


@dataclass
class Expect:
    """What the contract allows in answer to one message.

    ``reply``: ``id`` (exactly one answer carrying ``msg_id``), ``null`` (exactly one
    answer with ``id: null``), ``id_or_null`` (exactly one of the two), ``none``.
    ``codes``: error codes allowed (an empty set: no error allowed);
    ``result_ok``: whether a result is an acceptable answer."""

    kind: str
    reply: str
    msg_id: Any = None
    codes: frozenset[int] = frozenset()
    result_ok: bool = False
    sync: bool = True
    """Answered while the frame is read (before a later request's answer)."""


@dataclass
class Sent:
    data: bytes
    expect: Expect
    request: dict[str, Any] | None = field(default=None)


# -- strategies -------------------------------------------------------------------------

_text = st.text(max_size=24) | st.sampled_from(["\ud800", "a\udfffb", "\udbff\ud800"])
"""Strings, lone surrogates included (valid JSON escapes, not valid UTF-8): an invalid
param quoting one once made the -32602 answer itself fail (issue 13)."""
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)


def templates() -> dict[str, dict[str, Any]]:
    """Valid params for each known method; mutations start from these."""
    live_or_missing = LIVE
    return {
        "initialize": {"protocolVersion": 1, "clientCapabilities": {}},
        "session/new": {
            "cwd": "/tmp",
            "mcpServers": [],
            "_meta": {"threadline": {"model": "scripted:echo", "builtinTools": False}},
        },
        "session/prompt": {
            "sessionId": live_or_missing,
            "prompt": [{"type": "text", "text": "fuzz says hello"}],
        },
        "session/interrupt": {"sessionId": live_or_missing},
        "session/history": {"sessionId": live_or_missing},
        "session/context": {"sessionId": live_or_missing},
        "session/blob": {"sessionId": live_or_missing, "uri": "threadline-blob:" + "0" * 64},
        "session/load": {"sessionId": live_or_missing, "cwd": "/tmp", "mcpServers": []},
        "session/resume": {"sessionId": live_or_missing, "mcpServers": []},
        "session/list": {"cwd": "/tmp"},
        "session/close": {"sessionId": MISSING},
        "session/delete": {"sessionId": MISSING},
        "session/set_config_option": {
            "sessionId": MISSING,
            "configId": "model",
            "value": "scripted:echo",
        },
        "session/fork": {"sessionId": live_or_missing},
        "session/compact": {"sessionId": live_or_missing, "keepTurns": 2},
        "session/diff": {"sessionId": live_or_missing},
        "session/rewind": {"sessionId": MISSING, "beforeMessageId": "msg_0"},
        "session/unrewind": {"sessionId": MISSING, "rewindId": "sess_0"},
        "session/queue/list": {"sessionId": live_or_missing},
        "session/queue/update": {
            "sessionId": MISSING,
            "id": "msg_0",
            "prompt": [{"type": "text", "text": "fuzz"}],
        },
        "session/queue/remove": {"sessionId": MISSING},
        "session/queue/resume": {"sessionId": MISSING},
        "session/set_mode": {"sessionId": MISSING, "modeId": "ask"},
        "session/approvals": {"sessionId": live_or_missing},
        "session/remove_approval": {"sessionId": MISSING, "ruleId": "rule_0"},
        "session/set_title": {"sessionId": MISSING, "title": "fuzz"},
        "session/archive": {"sessionId": MISSING},
        "session/set_tags": {"sessionId": MISSING, "tags": ["fuzz"]},
        "session/search": {"query": "fuzz", "limit": 5},
        "session/export": {"sessionId": live_or_missing},
        "session/import": {"content": "not an export"},
    }


SAFE_FOR_LIVE = frozenset(
    {
        "session/prompt",
        "session/interrupt",
        "session/history",
        "session/context",
        "session/blob",
        "session/load",
        "session/resume",
        "session/fork",
        "session/compact",
        "session/diff",
        "session/queue/list",
        "session/approvals",
        "session/export",
    }
)
"""Methods that may target the live session; close, delete and set_config_option only
ever get missing or random ids, so the live session keeps its model and stays open."""

ASYNC_METHODS = frozenset(name for name, spec in METHODS.items() if spec.dispatch == "task")
"""Served in a task: answered later than requests that follow them."""


def _leaf_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            paths += _leaf_paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            paths += _leaf_paths(v, (*prefix, i))
    return paths


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        out = dict(value)
        out[head] = _replace(value[head], rest, new)
        return out
    out_list = list(value)
    out_list[head] = _replace(value[head], rest, new)
    return out_list


def _delete(value: Any, path: tuple[Any, ...]) -> Any:
    if len(path) == 1:
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if k != path[0]}
        return [v for i, v in enumerate(value) if i != path[0]]
    head = path[0]
    if isinstance(value, dict):
        return {**value, head: _delete(value[head], path[1:])}
    out = list(value)
    out[head] = _delete(value[head], path[1:])
    return out


@st.composite
def mutated_params(draw: st.DrawFn, method: str) -> Any:
    """A known method's valid params with one to three wrong types, gaps or extras."""
    params: Any = templates()[method]
    if method in SAFE_FOR_LIVE and "sessionId" in params:
        params = {**params, "sessionId": draw(st.sampled_from([LIVE, MISSING]))}
    for _ in range(draw(st.integers(0, 3))):
        paths = _leaf_paths(params)
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        in_mcp = "mcpServers" in path
        if op == "delete" and path:
            params = _delete(params, path)
        elif op == "add" and isinstance(params, dict):
            params = {**params, draw(_text): draw(json_values)}
        else:
            # mcpServers never gets a list or object: a random server entry would
            # make the sidecar spawn a random command.
            new = draw(_scalars if in_mcp else json_values)
            if path and path[-1] == "sessionId" and method not in SAFE_FOR_LIVE:
                new = draw(st.sampled_from([MISSING, new]))
            params = _replace(params, path, new)
    return params


_method_names = st.text(min_size=0, max_size=30).filter(
    lambda m: m not in KNOWN_METHODS and m not in NEVER_SENT
) | st.sampled_from(
    [
        "session/",
        "Session/Prompt",
        "session/prompt ",
        "session/prompt\x00",
        "$/cancelRequest",
        "$/setTrace",
        "tool/call",
        "session/update",
        "session/request_permission",
        "fs/read_text_file",
        "__init__",
        "initialize/",
        "",
    ]
)


def _valid_request() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {"cwd": "/tmp"}}


@st.composite
def specs(draw: st.DrawFn, framing: str) -> Spec:
    kind = draw(
        st.sampled_from(
            [
                "truncated_json",
                "invalid_utf8",
                "non_object",
                "odd_id",
                "null_id",
                "unknown_method",
                "unknown_notification",
                "known_as_notification",
                "bad_jsonrpc",
                "known_method",
                "known_method",
                "known_method",
                "bad_params_notification",
                "cancel_unknown",
                "huge",
                "deep",
                "stray_response",
                "framing_junk",
                "valid",
                "valid",
            ]
        )
    )
    if kind == "truncated_json":
        body = json.dumps(
            {**_valid_request(), "params": {"cwd": "/tmp", "x": draw(json_values)}}
        ).encode()
        cut = draw(st.integers(1, len(body) - 1))
        return Spec(kind, data=body[:cut])
    if kind == "invalid_utf8":
        tail = draw(st.binary(max_size=40)).replace(b"\n", b" ").replace(b"\r", b" ")
        return Spec(kind, data=b"\x80" + tail)
    if kind == "non_object":
        value = draw(json_values.filter(lambda v: not isinstance(v, dict)))
        return Spec(kind, value=value)
    if kind == "odd_id":
        odd = draw(
            st.floats(allow_nan=False, allow_infinity=False)
            | st.booleans()
            | st.lists(_scalars, max_size=3)
            | st.dictionaries(_text, _scalars, max_size=3)
        )
        return Spec(kind, method="session/list", params={}, odd_id=odd)
    if kind == "null_id":
        if draw(st.booleans()):
            return Spec("huge_id", method="session/list", params={}, id_shape="huge")
        return Spec(kind, method="session/list", params={})
    if kind == "unknown_method":
        return Spec(kind, method=draw(_method_names), params=draw(json_values))
    if kind == "unknown_notification":
        name = draw(_method_names.filter(lambda m: m not in ("$/cancelRequest",)))
        return Spec(kind, method=name, params=draw(json_values))
    if kind == "known_as_notification":
        method = draw(st.sampled_from(KNOWN_METHODS))
        return Spec(kind, method=method, params=draw(mutated_params(method)))
    if kind == "bad_jsonrpc":
        version = draw(st.sampled_from([None, "1.0", "2", 2.0, "", "2.0 "]))
        shape = draw(st.sampled_from(["str", "none"]))
        return Spec(kind, method="session/list", params={}, value=version, id_shape=shape)
    if kind == "known_method":
        method = draw(st.sampled_from(KNOWN_METHODS))
        return Spec(kind, method=method, params=draw(mutated_params(method)))
    if kind == "bad_params_notification":
        method = draw(st.sampled_from(["session/cancel", "$/cancelRequest", "$/cancel_request"]))
        params = draw(json_values | st.just({"sessionId": LIVE}) | st.just({"id": "nope"}))
        return Spec(kind, method=method, params=params)
    if kind == "cancel_unknown":
        return Spec(kind, method="$/cancelRequest", params={"id": draw(json_values)})
    if kind == "huge":
        size = draw(st.integers(50_000, 2_000_000))
        return Spec(kind, method="session/prompt", value=size)
    if kind == "deep":
        depth = draw(st.integers(1, PARSER_DEPTH) | st.integers(PARSER_DEPTH, 5000))
        as_dict = draw(st.booleans())
        method = draw(st.sampled_from(["session/list", "session/history", "session/new"]))
        return Spec(kind, method=method, value=(depth, as_dict))
    if kind == "stray_response":
        shape = draw(st.sampled_from(["result", "error", "error_no_message", "error_bad_code"]))
        return Spec(kind, value=(shape, draw(json_values)), id_shape=draw(_id_shapes))
    if kind == "framing_junk":
        return Spec(kind, data=b"X-Junk: yes" if framing == "headers" else b"   ")
    op = draw(
        st.sampled_from(
            ["list", "history", "prompt", "prompt", "interrupt", "cancel", "fork", "new"]
        )
    )
    text = draw(st.text(min_size=1, max_size=40).filter(lambda t: t.strip() != ""))
    if draw(st.integers(0, 4)) == 0:
        text += "\udc80 lone"  # a lone surrogate: valid JSON, not valid UTF-8
    return Spec("valid", method=op, value=text, id_shape=draw(_id_shapes))


_id_shapes = st.sampled_from(["str", "int", "bigint", "unicode", "surrogate"])


@st.composite
def examples(draw: st.DrawFn, framing: str) -> tuple[list[Spec], list[int]]:
    """A burst of messages, and where the byte stream is split into separate writes."""
    items = draw(st.lists(specs(framing), min_size=1, max_size=12))
    cuts = draw(st.lists(st.integers(0, 10_000), max_size=4))
    return items, cuts


# -- materialising ------------------------------------------------------------------------


class IdSource:
    """Fresh ids, unique for the whole test, in the shape a spec asks for."""

    def __init__(self) -> None:
        self.n = 0

    def make(self, shape: str) -> Any:
        self.n += 1
        if shape == "int":
            return self.n
        if shape == "bigint":
            return 10**300 + self.n
        if shape == "unicode":
            return f"ï\u00e9-\U0001f600-{self.n}"
        if shape == "surrogate":
            return f"lone-\ud800-{self.n}"
        if shape == "huge":  # only in huge_id specs: it may be unreadable for the server
            return HUGE_INT + self.n
        return f"fz-{self.n}"


def _substitute(value: Any, live: str) -> Any:
    if value == LIVE:
        return live
    if value == MISSING:
        return "sess_missing_0000"
    if isinstance(value, dict):
        return {k: _substitute(v, live) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, live) for v in value]
    return value


def _dump(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def materialise(spec: Spec, ids: IdSource, live: str) -> Sent:
    """Bytes to send for one spec, and what must come back."""
    k = spec.kind
    if k in ("truncated_json", "invalid_utf8"):
        return Sent(spec.data, Expect(k, "null", codes=frozenset({-32700})))
    if k == "framing_junk":
        if spec.data.strip():
            return Sent(spec.data, Expect(k, "null", codes=frozenset({-32600})))
        return Sent(spec.data, Expect(k, "none"))
    if k == "non_object":
        return Sent(_dump(spec.value), Expect(k, "null", codes=frozenset({-32600})))
    if k == "odd_id":
        msg = {"jsonrpc": "2.0", "id": spec.odd_id, "method": spec.method, "params": {}}
        expect = Expect(k, "id_or_null", spec.odd_id, frozenset({-32600}), result_ok=True)
        return Sent(_dump(msg), expect, msg)
    if k == "huge_id":
        # A valid request, but an id that Python refuses to parse by default: echoing
        # it and refusing the frame as unparseable are both answers.
        mid = ids.make("huge")
        msg = {"jsonrpc": "2.0", "id": mid, "method": spec.method, "params": {}}
        codes = frozenset({-32700, -32600})
        return Sent(_dump(msg), Expect(k, "id_or_null", mid, codes, result_ok=True), msg)
    if k == "null_id":
        msg = {"jsonrpc": "2.0", "id": None, "method": spec.method, "params": {}}
        return Sent(_dump(msg), Expect(k, "null", None, frozenset({-32600}), result_ok=True), msg)
    if k == "bad_jsonrpc":
        mid = ids.make("str")
        msg = {"id": mid, "method": spec.method, "params": {}}
        if spec.value is not None:
            msg["jsonrpc"] = spec.value
        if spec.id_shape == "none":  # neither a request nor a notification
            del msg["id"]
            return Sent(_dump(msg), Expect(k, "null", codes=frozenset({-32600})), msg)
        return Sent(_dump(msg), Expect(k, "id", mid, frozenset({-32600})), msg)
    if k in ("unknown_notification", "known_as_notification", "bad_params_notification"):
        msg = {"jsonrpc": "2.0", "method": spec.method, "params": _substitute(spec.params, live)}
        return Sent(_dump(msg), Expect(k, "none"), msg)
    if k == "cancel_unknown":
        msg = {"jsonrpc": "2.0", "method": spec.method, "params": spec.params}
        return Sent(_dump(msg), Expect(k, "none"), msg)
    if k == "unknown_method":
        mid = ids.make(spec.id_shape)
        msg = {"jsonrpc": "2.0", "id": mid, "method": spec.method, "params": spec.params}
        # Params that are not an object (positional ones included: no method takes
        # them) may be refused before the method is looked up.
        structured = spec.params is None or spec.params == [] or isinstance(spec.params, dict)
        codes = {-32601} if structured else {-32601, -32602, -32600}
        return Sent(_dump(msg), Expect(k, "id", mid, frozenset(codes)), msg)
    if k == "known_method":
        assert spec.method is not None
        mid = ids.make(spec.id_shape)
        params = _substitute(spec.params, live)
        msg = {"jsonrpc": "2.0", "id": mid, "method": spec.method, "params": params}
        codes = PARAM_CODES | ({-32012} if spec.method == "session/prompt" else set())
        expect = Expect(k, "id", mid, frozenset(codes), result_ok=True)
        expect.sync = spec.method not in ASYNC_METHODS
        return Sent(_dump(msg), expect, msg)
    if k == "huge":
        mid = ids.make("str")
        params = {
            "sessionId": "sess_missing_0000",
            "prompt": [{"type": "text", "text": "x" * int(spec.value)}],
        }
        msg = {"jsonrpc": "2.0", "id": mid, "method": spec.method, "params": params}
        expect = Expect(k, "id", mid, frozenset({-32002}), sync=False)
        return Sent(_dump(msg), expect, None)
    if k == "deep":
        depth, as_dict = spec.value
        mid = ids.make("str")
        key = {"session/list": "cursor", "session/history": "sessionId"}.get(
            str(spec.method), "cwd"
        )
        extra = ',"mcpServers":[]' if spec.method == "session/new" else ""
        opener, closer = ('{"k":', "}") if as_dict else ("[", "]")
        nested = opener * depth + '"leaf"' + closer * depth  # built as text: no recursion
        body = (
            f'{{"jsonrpc":"2.0","id":{json.dumps(mid)},"method":"{spec.method}",'
            f'"params":{{"{key}":{nested}{extra}}}}}'
        ).encode()
        if depth <= PARSER_DEPTH:
            return Sent(body, Expect(k, "id", mid, frozenset({-32602})), None)
        # Past the parser's limit the server may refuse the frame as unparseable.
        codes = frozenset({-32602, -32700, -32600})
        return Sent(body, Expect(k, "id_or_null", mid, codes, sync=True), None)
    if k == "stray_response":
        shape, payload = spec.value
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": ids.make(spec.id_shape)}
        if shape == "result":
            msg["result"] = payload
        elif shape == "error":
            msg["error"] = {"code": -32000, "message": str(payload)[:50], "data": payload}
        elif shape == "error_bad_code":
            msg["error"] = {"code": str(payload)[:10], "message": "x"}
        else:
            msg["error"] = {"code": -32001}
        return Sent(_dump(msg), Expect(k, "none"), msg)
    return _valid(spec, ids, live)


def _valid(spec: Spec, ids: IdSource, live: str) -> Sent:
    op, text = spec.method, str(spec.value)
    mid = ids.make(spec.id_shape)
    ref = {"sessionId": live}
    if op == "cancel":
        msg = {"jsonrpc": "2.0", "method": "session/cancel", "params": ref}
        return Sent(_dump(msg), Expect("valid:cancel", "none"), msg)
    method, params, codes, sync = {
        "list": ("session/list", {}, frozenset(), True),
        "history": ("session/history", ref, frozenset(), True),
        "prompt": (
            "session/prompt",
            {**ref, "prompt": [{"type": "text", "text": text}]},
            frozenset({-32010}),
            False,
        ),
        "interrupt": ("session/interrupt", ref, frozenset(), False),
        "fork": ("session/fork", ref, frozenset(), True),
        "new": (
            "session/new",
            {"cwd": "/tmp", "mcpServers": [], "_meta": {"threadline": {"model": "scripted:echo"}}},
            frozenset(),
            True,
        ),
    }[str(op)]
    msg = {"jsonrpc": "2.0", "id": mid, "method": method, "params": params}
    return Sent(_dump(msg), Expect(f"valid:{op}", "id", mid, codes, True, sync), msg)


def check_valid_result(kind: str, result: Any) -> str | None:
    """Shape checks for answers to valid traffic; a message when wrong."""
    if kind == "valid:list" and not isinstance(result.get("sessions"), list):
        return "session/list answered without a sessions list"
    if kind == "valid:history" and not isinstance(result.get("messages"), list):
        return "session/history answered without messages"
    if kind == "valid:prompt" and result.get("stopReason") not in ("end_turn", "cancelled"):
        return f"echo prompt ended with {result.get('stopReason')!r}"
    if kind == "valid:interrupt" and not isinstance(result.get("interrupted"), bool):
        return "session/interrupt answered without interrupted"
    if kind in ("valid:fork", "valid:new") and not isinstance(result.get("sessionId"), str):
        return f"{kind} answered without a sessionId"
    return None
