"""The server answers ``initialize`` before importing pydantic only for params the
protocol model surely accepts, and reads them the same way afterwards."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from threadline_protocol.methods import InitializeParams
from threadline_protocol.quick import certainly_valid_initialize

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
_value = st.one_of(
    _json,
    st.sampled_from(["$/cancel_request", "$/cancelRequest", "\ud800", "true", 1, True, None]),
)


def _maybe(keys: list[str], value: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(keys), value, max_size=len(keys))


_threadline = _maybe(["cancelMethod", "cancel_method", "other"], _value)
_meta = _maybe(["threadline", "x"], _value | _threadline)
_fs = _maybe(["readTextFile", "writeTextFile", "read_text_file", "zz"], _value)
_caps = _maybe(["fs", "terminal", "_meta", "meta", "read_text_file"], _value | _fs | _meta)
_info = _maybe(["name", "version", "title", "extra"], _value)
_params = _maybe(
    [
        "protocolVersion",
        "protocol_version",
        "clientCapabilities",
        "client_capabilities",
        "clientInfo",
        "processId",
        "capabilities",
        "initializationOptions",
        "_meta",
        "meta",
        "rootUri",
    ],
    _value | _caps | _info | _meta,
)


def _model_accepts(params: dict[str, Any]) -> bool:
    try:
        p = InitializeParams.model_validate(params)
        p.client_capabilities.threadline()
        p.client_capabilities.wire()
    except (ValidationError, ValueError):
        return False
    return True


@settings(max_examples=600, deadline=None)
@given(_params)
def test_whatever_the_quick_check_accepts_the_model_accepts(params: dict[str, Any]) -> None:
    if certainly_valid_initialize(params):
        assert _model_accepts(params), params


def test_what_clients_send_is_answered_early() -> None:
    for params in [
        {},
        {"protocolVersion": 1, "clientCapabilities": {}},
        {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": True, "writeTextFile": True},
                "terminal": True,
                "_meta": {"threadline": {"cancelMethod": "$/cancelRequest"}},
            },
            "clientInfo": {"name": "zed", "version": "0.200.0"},
        },
        {"processId": 123, "capabilities": {}, "clientInfo": {"name": "Neovim"}},
    ]:
        assert certainly_valid_initialize(params), params
        assert _model_accepts(params)


def test_doubtful_params_go_the_full_way() -> None:
    for params in [
        {"protocolVersion": "1"},
        {"protocolVersion": True},
        {"clientCapabilities": {"terminal": "yes"}},
        {"clientCapabilities": {"_meta": {"threadline": {"cancelMethod": "$/other"}}}},
        {"client_capabilities": {}},
        {"clientInfo": {"version": "1"}},
        {"clientCapabilities": {"x": "\ud800"}},
    ]:
        assert not certainly_valid_initialize(params), params


def test_boot_imports_neither_pydantic_nor_lsprotocol() -> None:
    """What ``threadline serve`` loads to answer ``initialize``."""
    code = (
        "import sys, threadline_cli, threadline.rpc.boot; "
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'lsprotocol', 'pygls', 'anyio', 'threadline_client', 'rich', 'argparse', "
        "'sqlite3')]; "
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == ""
