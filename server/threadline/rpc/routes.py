"""The server's half of the method table: each method the client may send, with the one
call that serves it, checked against the protocol's table (``METHODS``) when built.

How a method is served (inline, in a task, as a notification) is the protocol's word
(``MethodSpec.dispatch``), not the shape of the function that serves it; so a method
without a call, or a call without a method, stops the server at import instead of
answering -32601 for a method the protocol promises.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from threadline_protocol.methods import MethodSpec

if TYPE_CHECKING:
    from .server import ThreadlineServer

Call = Callable[["ThreadlineServer", Any], Any]
"""Takes the validated params model (None for a method without params); returns the
result model, None, or an awaitable of either."""

SERVED = ("inline", "task", "notification")
"""The dispatch modes served by a call (``connection`` methods the connection serves)."""


class MethodTableError(Exception):
    """The server's calls and the protocol's method table disagree."""


@dataclass(frozen=True, slots=True)
class Route:
    spec: MethodSpec
    call: Call

    def params(self, raw: dict[str, Any]) -> BaseModel | None:
        """The params model, validated (pydantic's ``ValidationError`` is -32602)."""
        return None if self.spec.params is None else self.spec.params.model_validate(raw)


def routes(methods: Mapping[str, MethodSpec], calls: Mapping[str, Call]) -> dict[str, Route]:
    """Pair each served method of ``methods`` with its call. Raises
    :class:`MethodTableError` when one lacks a call, a call has no such method, or a
    call's ``params`` is not annotated with the method's params model."""
    served = {name for name, spec in methods.items() if spec.dispatch in SERVED}
    missing = sorted(served - calls.keys())
    extra = sorted(calls.keys() - served)
    if missing or extra:
        raise MethodTableError(
            f"methods without a call: {missing}; calls without a served method: {extra}"
        )
    for name, call in calls.items():
        want = methods[name].params
        got = typing.get_type_hints(call).get("params", type(None))
        if got is not (type(None) if want is None else want):
            raise MethodTableError(f"{name}: the call takes {got}, the method sends {want}")
    return {name: Route(methods[name], call) for name, call in calls.items()}
