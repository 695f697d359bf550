"""What a v2 connection serves: ACP v2's methods and Threadline's ``_threadline/…``
verbs, each one call into the same engine a v1 connection uses (``rpc/routes.py``),
checked against the v2 method table (``threadline_protocol.acp_v2_methods``) when built.

A v2 call only reshapes: the v2 params into the engine's params models, the engine's
result into the v2 result (``_meta`` moved, ``id`` → ``configId``…). The one v2 call
that does more than reshape is ``session/prompt``: v2 answers it on acceptance, so
the engine's prompt runs on after the answer, and its end is shown as an idle
``state_update`` (the engine's ``WorkEnded``, `projection.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from threadline_protocol import acp_v2 as v2
from threadline_protocol import methods as pm
from threadline_protocol.acp_v2_methods import METHODS_V2, OWN, VERBS
from threadline_protocol.base import Prewritten

from ... import __version__
from ...engine import capabilities
from ...engine.engine import Engine
from ...engine.errors import InvalidParams
from .. import routes as v1
from ..routes import Call, Route
from ..wire import wire
from .meta import v1_meta, v1_params, v2_deep
from .options import v2_options

_WORK: set[asyncio.Task[Any]] = set()
"""Prompts answered on acceptance whose work runs on (kept from the collector)."""


class Moved(Prewritten):
    """A Threadline verb's v1 result, written with its ``_meta`` moved for v2."""

    inner: Any

    def written(self) -> dict[str, Any]:
        return v2_deep(wire(self.inner))


class OwnRoute(Route):
    """A ``_threadline/…`` verb: the v1 method's call and models, ``_meta`` moved both
    ways."""

    def params(self, raw: dict[str, Any]) -> Any:
        return super().params(v1_params(raw))

    def serve(self, engine: Engine, params: Any) -> Any:
        result = super().serve(engine, params)
        if isinstance(result, Awaitable):
            return _moved_later(result)
        return Moved.model_construct(inner=result)


async def _moved_later(result: Awaitable[Any]) -> Moved:
    return Moved.model_construct(inner=await result)


# -- the lifecycle ------------------------------------------------------------------------


def initialize(engine: Engine, params: v2.InitializeRequestV2) -> v2.InitializeResponseV2:
    """v2's capabilities: the session baseline, prompts with embedded context, MCP over
    stdio and HTTP (v2 has no SSE), delete, ``additionalDirectories``; Threadline's own
    block in ``_meta``. No ``authMethods``: Threadline needs no authentication (the
    providers' keys are the user's configuration), so a client never calls ``auth/*``
    (those answer -32601: not offered)."""
    v1_answer = capabilities.initialize_result(__version__, engine.providers)
    own = v1_answer["agentCapabilities"]["_meta"]["threadline"]
    info = v1_answer["agentInfo"]
    return v2.InitializeResponseV2(
        protocol_version=v2.PROTOCOL_VERSION_2,
        info=v2.Implementation(name=info["name"], title=info["title"], version=info["version"]),
        capabilities=v2.AgentCapabilitiesV2(
            session=v2.SessionCapabilitiesV2(
                prompt=v2.PromptCapabilitiesV2(embedded_context={}),
                mcp=v2.McpCapabilitiesV2(stdio={}, http={}),
                delete={},
                additional_directories={},
            ),
            meta={v2.META_KEY: {**own, "methods": sorted(OWN + v for v in VERBS)}},
        ),
        auth_methods=[],
    )


def _servers(params: v2.NewSessionRequestV2 | v2.ResumeSessionRequestV2) -> list[dict[str, Any]]:
    """v2's MCP server entries as the engine's models take them (v2 names stdio)."""
    out: list[dict[str, Any]] = []
    for server in params.mcp_servers:
        entry = server.model_dump(by_alias=True)
        if entry["type"] == "stdio":
            del entry["type"]
        out.append(entry)
    return out


def new_session(
    engine: Engine, params: v2.NewSessionRequestV2
) -> Awaitable[v2.NewSessionResponseV2]:
    raw = {
        "cwd": params.cwd,
        "additionalDirectories": params.additional_directories,
        "mcpServers": _servers(params),
        "_meta": v1_meta(params.meta),
    }
    result = engine.new_session(pm.NewSessionParams.model_validate(raw))

    async def done() -> v2.NewSessionResponseV2:
        got = await result if isinstance(result, Awaitable) else result
        return v2.NewSessionResponseV2(
            session_id=got.session_id,
            config_options=v2_options(got.config_options or []),
            meta=_moved_meta(got.meta),
        )

    return done()


def _moved_meta(meta: Any) -> dict[str, Any] | None:
    if meta is None:
        return None
    moved = v2_deep({"_meta": wire(meta) if not isinstance(meta, dict) else meta})["_meta"]
    return moved or None


def resume(
    engine: Engine, params: v2.ResumeSessionRequestV2
) -> Awaitable[v2.ResumeSessionResponseV2]:
    """``replayFrom: {type: start}`` is v1's load (history replayed first), without it
    v1's resume. ``additionalDirectories`` is the session's complete list of extra roots
    from now on (omitted or empty: none), as on v1."""
    raw = {
        "sessionId": params.session_id,
        "cwd": params.cwd,
        "additionalDirectories": params.additional_directories,
        "mcpServers": _servers(params),
    }
    v1_params_ = pm.LoadSessionParams.model_validate(raw)
    got = engine.load(v1_params_) if params.replay_from is not None else engine.resume(v1_params_)

    async def done() -> v2.ResumeSessionResponseV2:
        result = await got if isinstance(got, Awaitable) else got
        return v2.ResumeSessionResponseV2(
            config_options=v2_options(result.config_options or []),
            meta=_moved_meta(result.meta),
        )

    return done()


async def prompt(engine: Engine, params: v2.PromptRequestV2) -> v2.EmptyResponseV2:
    """Answered ``{}`` once the prompt is in the session's history (or waits to join
    or follow the running work); refused (the error) if it never got there."""
    accepted: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

    def on_accepted(message_id: str | None) -> None:
        if not accepted.done():
            accepted.set_result(message_id)

    raw = {"sessionId": params.session_id, "prompt": params.prompt, "_meta": v1_meta(params.meta)}
    work = _run(engine.prompt(pm.PromptParams.model_validate(raw), on_accepted))

    def ended_first(task: asyncio.Task[Any]) -> None:
        """The work ended before the prompt was accepted: its error is the answer."""
        if accepted.done():
            return
        error = None if task.cancelled() else task.exception()
        accepted.set_exception(
            error or InvalidParams("the prompt ended before it was accepted", {})
        )

    work.add_done_callback(ended_first)
    try:
        await accepted
    except asyncio.CancelledError:
        work.cancel()
        raise
    return v2.EmptyResponseV2()


def _run(coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
    task = asyncio.ensure_future(coro)
    _WORK.add(task)
    task.add_done_callback(_done)
    return task


def _done(task: asyncio.Task[Any]) -> None:
    """The work's end is shown as a state update; its result is nobody's answer."""
    _WORK.discard(task)
    with contextlib.suppress(BaseException):
        task.result()


def cancel(engine: Engine, params: v2.SessionRefV2) -> None:
    raw = {"sessionId": params.session_id, "_meta": v1_meta(params.meta)}
    engine.cancel(pm.InterruptParams.model_validate(raw))


def list_sessions(engine: Engine, params: v2.ListSessionsRequestV2) -> v2.ListSessionsResponseV2:
    raw = {"cwd": params.cwd, "cursor": params.cursor, "_meta": v1_meta(params.meta)}
    got = wire(engine.list_sessions(pm.ListSessionsParams.model_validate(raw)))
    return v2.ListSessionsResponseV2.model_validate(v2_deep(got))


def _empty(call: Callable[[Engine, str], Awaitable[Any]]) -> Call:
    async def served(engine: Engine, params: v2.SessionRefV2) -> v2.EmptyResponseV2:
        await call(engine, params.session_id)
        return v2.EmptyResponseV2()

    served.__name__ = call.__name__
    return served


def set_config_option(
    engine: Engine, params: v2.SetConfigOptionRequestV2
) -> v2.SetConfigOptionResponseV2:
    raw = {"sessionId": params.session_id, "configId": params.config_id, "value": params.value}
    got = engine.set_config_option(pm.SetConfigOptionParams.model_validate(raw))
    return v2.SetConfigOptionResponseV2(
        config_options=v2_options(got.config_options), meta=_moved_meta(got.meta)
    )


CALLS_V2: dict[str, Call] = {
    "initialize": initialize,
    "shutdown": Engine.shutdown,
    "session/new": new_session,
    "session/prompt": prompt,
    "session/cancel": cancel,
    "session/resume": resume,
    "session/list": list_sessions,
    "session/close": _empty(Engine.close),
    "session/delete": _empty(Engine.delete),
    "session/set_config_option": set_config_option,
}


def routes_v2() -> dict[str, Route]:
    """The v2 table's routes; a verb is served by its v1 method's call."""
    own = {OWN + verb: v1.CALLS[name] for verb, name in VERBS.items() if name in v1.CALLS}
    served = v1.routes(METHODS_V2, {**CALLS_V2, **own})
    for name in own:
        served[name] = OwnRoute(served[name].spec, served[name].call)
    return served


ROUTES_V2 = routes_v2()
