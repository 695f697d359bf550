"""What changes on a connection once ``initialize`` asked for ``protocolVersion: 2``:
the capabilities the engine reads, and the requests the server sends the client."""

from __future__ import annotations

from typing import Any

from threadline_protocol import acp_v2 as v2

from .meta import v1_meta, v2_meta
from .projection import tool_content

OWN_REQUESTS = {"tool/call": "_threadline/tool/call"}
"""Threadline's own server→client requests, as v2 names them."""


def wants_v2(params: Any) -> bool:
    """``initialize`` params that ask for v2 (or later: answered with 2)."""
    if not isinstance(params, dict):
        return False
    version = params.get("protocolVersion")
    return isinstance(version, int) and not isinstance(version, bool) and version >= 2


def client_capabilities(params: v2.InitializeRequestV2) -> dict[str, Any]:
    """The client as the engine reads it (v1's shape). A v2 client has no ``fs`` or
    ``terminal`` (v2 removed them: the sidecar reads, writes and runs itself); its
    ``elicitation`` means what v1's does; and a prompt it sends while the session
    works joins that work (``steer``) unless it says otherwise: v2's prompt "starts or
    contributes to" foreground work."""
    own = dict((v1_meta(params.capabilities.meta) or {}).get("threadline") or {})
    own.setdefault("whileRunning", "steer")
    caps: dict[str, Any] = {"_meta": {"threadline": own}}
    if params.capabilities.elicitation is not None:
        caps["elicitation"] = params.capabilities.elicitation.model_dump(exclude_none=True)
    return caps


def outgoing(method: str, params: Any) -> tuple[str, Any]:
    """A request to the client as v2 has it."""
    if method == "session/request_permission" and isinstance(params, dict):
        return method, permission_request(params)
    return OWN_REQUESTS.get(method, method), v2_meta_of(params)


def v2_meta_of(params: Any) -> Any:
    if isinstance(params, dict) and "_meta" in params:
        return {**params, "_meta": v2_meta(params["_meta"])}
    return params


def permission_request(params: dict[str, Any]) -> dict[str, Any]:
    """v1's ``toolCall`` becomes v2's ``subject``; the prompt's words are ``title``."""
    call = dict(params.get("toolCall") or {})
    if "content" in call:
        call["content"] = [tool_content(c) for c in call["content"] or []]
    if "_meta" in call:
        call["_meta"] = v2_meta(call["_meta"])
    out: dict[str, Any] = {
        "sessionId": params["sessionId"],
        "title": f"Allow {call.get('title') or 'this tool call'}?",
        "subject": {"type": "tool_call", "toolCall": call},
        "options": params.get("options") or [],
    }
    if "_meta" in params:
        out["_meta"] = v2_meta(params["_meta"])
    return out
