"""Each method the client may send, and the engine operation that serves it, checked
against the protocol's table (``METHODS``) when built.

The table maps a method straight to an ``Engine`` method; a method whose params are
only a session id (``SessionRef``) passes that id (:func:`by_id`). No logic lives here:
a call that needs more than that belongs in the engine, and what the connection itself
keeps of a request (the client's capabilities, that shutdown began) is the server's
(``ThreadlineServer.note``). How a method is served (inline, in a task, as a
notification) is the protocol's word (``MethodSpec.dispatch``), not the shape of the
function that serves it; so a method without a call, or a call without a method, stops
the server at import instead of answering -32601 for a method the protocol promises.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from threadline_protocol import methods as pm
from threadline_protocol.methods import METHODS, MethodSpec

from .. import __version__
from ..engine import modes as session_modes
from ..engine.engine import Engine

R = TypeVar("R")

Call = Callable[..., Any]
"""An ``Engine`` method (or one built by :func:`by_id`): takes the engine and the
validated params model (nothing for a method without params); returns the result
model, None, or an awaitable of either."""

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

    def serve(self, engine: Engine, params: BaseModel | None) -> Any:
        """Hand the validated params to the engine operation."""
        return self.call(engine) if params is None else self.call(engine, params)


def by_id(operation: Callable[[Engine, str], R]) -> Callable[[Engine, pm.SessionRef], R]:
    """An engine operation on one session, served from a ``SessionRef``'s id."""

    def call(engine: Engine, params: pm.SessionRef) -> R:
        return operation(engine, params.session_id)

    call.__name__ = call.__qualname__ = operation.__name__
    return call


def initialize(engine: Engine, params: pm.InitializeParams) -> pm.InitializeResult:
    """The server's capabilities; this server's version is the answer's, not the
    engine's (the client's capabilities the connection takes in itself)."""
    return engine.initialize_result(__version__)


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


CALLS: dict[str, Call] = {
    "initialize": initialize,
    "shutdown": Engine.shutdown,
    "session/new": Engine.new_session,
    "session/prompt": Engine.prompt,
    "session/interrupt": Engine.interrupt,
    "session/cancel": Engine.cancel,
    "session/history": by_id(Engine.history),
    "session/context": by_id(Engine.context),
    "session/blob": Engine.blob,
    "session/load": Engine.load,
    "session/resume": Engine.resume,
    "session/list": Engine.list_sessions,
    "session/close": by_id(Engine.close),
    "session/delete": by_id(Engine.delete),
    "session/set_config_option": Engine.set_config_option,
    "session/set_mode": Engine.set_mode,
    "session/approvals": session_modes.approvals,
    "session/remove_approval": session_modes.remove_approval,
    "session/fork": Engine.fork,
    "session/compact": Engine.compact,
    "session/queue/list": by_id(Engine.queue_list),
    "session/queue/update": Engine.queue_update,
    "session/queue/remove": Engine.queue_remove,
    "session/queue/resume": by_id(Engine.queue_resume),
    "session/diff": Engine.diff,
    "session/rewind": Engine.rewind,
    "session/unrewind": Engine.unrewind,
    "session/set_title": Engine.set_title,
    "session/archive": Engine.archive,
    "session/set_tags": Engine.set_tags,
    "session/search": Engine.search,
    "session/export": Engine.export,
    "session/import": Engine.import_log,
}

ROUTES = routes(METHODS, CALLS)
"""Built at import: a method of the table without a call here (or the reverse) fails
loudly (``MethodTableError``)."""

OPENING = (
    "session/list",
    "session/load",
    "session/resume",
    "session/history",
    "session/new",
    "session/prompt",
)
"""What an editor sends first when a window opens a session. Their params and result
models are built at start-up, while the sidecar waits for its first request
(`unbuilt_models`, `serve.build_when_idle`): the protocol builds models on first use
(``defer_build``, so importing it stays cheap), and ``LoadSessionParams`` alone took
~4–10 ms of the first ``session/load`` of a fresh sidecar."""


def unbuilt_models(names: tuple[str, ...] = OPENING) -> list[type[BaseModel]]:
    """The params and result models of these methods not built yet, each once."""
    out: list[type[BaseModel]] = []
    for name in names:
        spec = ROUTES[name].spec
        for model in (spec.params, spec.result):
            if model is not None and not model.__pydantic_complete__ and model not in out:
                out.append(model)
    return out
