"""The ``_meta`` move between v1 and v2.

On v1 Threadline's block is ``_meta.threadline`` (and a few of its keys sit at
``_meta``'s root, as ``session/list`` entries' ``parentSessionId``). ACP v2 reserves
every un-prefixed name for the protocol (only W3C trace context keys are named at
``_meta``'s root) and asks extensions for ``_``-prefixed ones, so on v2 everything of
Threadline's is under ``_meta._threadline``. The engine and the v1 models keep the v1
form; a v2 connection moves it on the way out (`v2_meta`, `v2_deep`) and back on the
way in (`v1_meta`).
"""

from __future__ import annotations

from typing import Any

from threadline_protocol.acp_v2 import META_KEY

W3C = frozenset({"traceparent", "tracestate", "baggage"})


def v2_meta(meta: Any) -> Any:
    """A v1 ``_meta`` object as v2 carries it."""
    if not isinstance(meta, dict):
        return meta
    out: dict[str, Any] = {}
    own: dict[str, Any] = {}
    for key, value in meta.items():
        if key == "threadline" and isinstance(value, dict):
            own.update(value)
        elif key.startswith("_") or key in W3C:
            out[key] = value
        else:
            own[key] = value
    if own:
        out[META_KEY] = {**own, **(out.get(META_KEY) or {})}
    return out


def v2_deep(value: Any) -> Any:
    """Every ``_meta`` object in a result moved (``session/list`` entries too)."""
    if isinstance(value, list):
        return [v2_deep(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {k: v2_meta(v2_deep(v)) if k == "_meta" else v2_deep(v) for k, v in value.items()}


def v1_meta(meta: Any) -> Any:
    """A v2 client's ``_meta`` as the v1 models read it (``_threadline`` → ``threadline``)."""
    if not isinstance(meta, dict):
        return meta
    out = {k: v for k, v in meta.items() if k != META_KEY}
    if isinstance(meta.get(META_KEY), dict):
        out["threadline"] = meta[META_KEY]
    return out


def v1_params(params: dict[str, Any]) -> dict[str, Any]:
    """A v2 client's params for a Threadline verb, with its ``_meta`` moved back."""
    if "_meta" not in params:
        return params
    return {**params, "_meta": v1_meta(params["_meta"])}
