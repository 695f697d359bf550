"""The method table: validate params with a protocol model, call one engine method.

No logic lives here; a handler that needs more than a line belongs in the engine.
"""

from __future__ import annotations

from typing import Any

from threadline_protocol import methods as pm

from .. import __version__
from .server import Handler, NotificationHandler, ThreadlineServer


def initialized(server: ThreadlineServer, params: dict[str, Any]) -> None:
    """Take in ``initialize``'s params (also for one answered early by ``rpc/boot.py``)."""
    server.client_connected(pm.InitializeParams.model_validate(params).client_capabilities)


def initialize(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    initialized(server, params)
    return server.engine.initialize_result(__version__)


async def shutdown(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    server.shutting_down = True
    await server.engine.shutdown()
    return None


def session_new(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return server.engine.new_session(pm.NewSessionParams.model_validate(params))


async def session_prompt(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return await server.engine.prompt(pm.PromptParams.model_validate(params))


async def session_interrupt(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return await server.engine.interrupt(pm.SessionRef.model_validate(params).session_id)


def session_history(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return server.engine.history(pm.SessionRef.model_validate(params).session_id)


async def session_context(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return await server.engine.context(pm.SessionRef.model_validate(params).session_id)


def session_load(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return server.engine.load(pm.LoadSessionParams.model_validate(params))


def session_resume(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return server.engine.resume(pm.LoadSessionParams.model_validate(params))


def session_list(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return server.engine.list_sessions(pm.ListSessionsParams.model_validate(params))


async def session_close(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return await server.engine.close(pm.SessionRef.model_validate(params).session_id)


async def session_delete(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return await server.engine.delete(pm.SessionRef.model_validate(params).session_id)


def session_set_config_option(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return server.engine.set_config_option(pm.SetConfigOptionParams.model_validate(params))


def session_fork(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return server.engine.fork(pm.ForkParams.model_validate(params))


async def session_compact(server: ThreadlineServer, params: dict[str, Any]) -> Any:
    return await server.engine.compact(pm.CompactParams.model_validate(params))


def session_cancel(server: ThreadlineServer, params: dict[str, Any]) -> None:
    server.engine.cancel(pm.SessionRef.model_validate(params).session_id)


HANDLERS: dict[str, Handler] = {
    "initialize": initialize,
    "shutdown": shutdown,
    "session/new": session_new,
    "session/prompt": session_prompt,
    "session/interrupt": session_interrupt,
    "session/history": session_history,
    "session/context": session_context,
    "session/load": session_load,
    "session/resume": session_resume,
    "session/list": session_list,
    "session/close": session_close,
    "session/delete": session_delete,
    "session/set_config_option": session_set_config_option,
    "session/fork": session_fork,
    "session/compact": session_compact,
}

NOTIFICATIONS: dict[str, NotificationHandler] = {
    "session/cancel": session_cancel,
}
