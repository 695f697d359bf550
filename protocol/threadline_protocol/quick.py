"""A plain-Python test that ``initialize`` params are certainly valid, without pydantic.

The server answers ``initialize`` before it imports the models (``threadline.rpc.boot``);
it may do so only for params that :class:`~threadline_protocol.methods.InitializeParams`
would accept *and* read the same way. So this check is strict where the model is
lenient: JSON types only (no ``"true"`` for a bool), camelCase keys only (a snake_case
alias falls back), a known ``cancelMethod``. Anything it refuses goes the full way and
gets the model's own answer, errors included. ``tests/unit/test_quick_initialize.py``
checks that whatever this accepts, the model accepts.
"""

from __future__ import annotations

import json
from typing import Any

_CANCEL_METHODS = ("$/cancel_request", "$/cancelRequest")
_WHILE_RUNNING = ("steer", "queue", "refuse")
_SNAKE = (
    "protocol_version",
    "client_capabilities",
    "client_info",
    "process_id",
    "initialization_options",
    "meta",
)


def _opt(value: Any, kind: type) -> bool:
    return value is None or (isinstance(value, kind) and not isinstance(value, bool))


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _opt_bool(value: Any) -> bool:
    return value is None or isinstance(value, bool)


def _capabilities(caps: Any) -> bool:
    if not isinstance(caps, dict):
        return False
    if any(k in caps for k in ("meta", "read_text_file", "write_text_file")):
        return False
    fs = caps.get("fs", {})
    if not isinstance(fs, dict) or any(k in fs for k in ("read_text_file", "write_text_file")):
        return False
    if not all(_is_bool(fs.get(k, False)) for k in ("readTextFile", "writeTextFile")):
        return False
    if not _is_bool(caps.get("terminal", False)):
        return False
    meta = caps.get("_meta")
    if meta is None:
        return True
    if not isinstance(meta, dict):
        return False
    threadline = meta.get("threadline")
    if threadline is None:
        return True
    if not isinstance(threadline, dict) or any(
        k in threadline for k in ("cancel_method", "while_running", "image_references")
    ):
        return False
    if not _opt_bool(threadline.get("imageReferences")):
        return False
    method = threadline.get("cancelMethod")
    if not (method is None or (isinstance(method, str) and method in _CANCEL_METHODS)):
        return False
    mode = threadline.get("whileRunning")
    return mode is None or (isinstance(mode, str) and mode in _WHILE_RUNNING)


def certainly_valid_initialize(params: dict[str, Any]) -> bool:
    """True only if ``InitializeParams.model_validate(params)`` succeeds."""
    if any(k in params for k in _SNAKE):
        return False
    try:  # a lone surrogate anywhere: the model's JSON dump of the capabilities fails
        json.dumps(params, ensure_ascii=False).encode()
    except (UnicodeEncodeError, ValueError, RecursionError):
        return False
    version = params.get("protocolVersion", 1)
    if not _opt(version, int) or version is None or abs(version) >= 1 << 63:
        return False
    if version >= 2:  # ACP v2 is negotiated by the full server (``rpc/v2``)
        return False
    if not _opt(params.get("processId"), int) or abs(params.get("processId") or 0) >= 1 << 63:
        return False
    for key in ("capabilities", "initializationOptions", "_meta"):
        if not _opt(params.get(key), dict):
            return False
    if "clientCapabilities" in params and not _capabilities(params["clientCapabilities"]):
        return False
    info = params.get("clientInfo")
    if info is not None:
        if not isinstance(info, dict) or not isinstance(info.get("name"), str):
            return False
        if not all(_opt(info.get(k), str) for k in ("version", "title")):
            return False
    return True
