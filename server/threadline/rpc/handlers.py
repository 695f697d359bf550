"""Each method the client may send, and the one engine call that serves it.

No logic lives here; a call that needs more than a line belongs in the engine. The
params come validated with the method's model (``Route.params``); how each method is
served (inline or in a task) is the protocol's table's word (``MethodSpec.dispatch``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from threadline_protocol import catalog as cat
from threadline_protocol import methods as pm
from threadline_protocol.methods import METHODS

from .. import __version__
from .routes import Call, routes
from .server import ThreadlineServer


def initialized(server: ThreadlineServer, params: dict[str, Any]) -> None:
    """Take in ``initialize``'s params answered early by ``rpc/boot.py``."""
    server.client_connected(pm.InitializeParams.model_validate(params).client_capabilities)


def initialize(server: ThreadlineServer, params: pm.InitializeParams) -> pm.InitializeResult:
    server.client_connected(params.client_capabilities)
    return server.engine.initialize_result(__version__)


async def shutdown(server: ThreadlineServer, params: None) -> None:
    server.shutting_down = True
    await server.engine.shutdown()


def session_new(
    server: ThreadlineServer, params: pm.NewSessionParams
) -> pm.NewSessionResult | Awaitable[pm.NewSessionResult]:
    return server.engine.new_session(params)


def session_prompt(server: ThreadlineServer, params: pm.PromptParams) -> Awaitable[pm.PromptResult]:
    return server.engine.prompt(params)


def session_interrupt(
    server: ThreadlineServer, params: pm.SessionRef
) -> Awaitable[pm.InterruptResult]:
    return server.engine.interrupt(params.session_id)


def session_cancel(server: ThreadlineServer, params: pm.SessionRef) -> None:
    server.engine.cancel(params.session_id)


def session_history(server: ThreadlineServer, params: pm.SessionRef) -> pm.HistoryResult:
    return server.engine.history(params.session_id)


def session_context(server: ThreadlineServer, params: pm.SessionRef) -> Awaitable[pm.ContextResult]:
    return server.engine.context(params.session_id)


def session_load(
    server: ThreadlineServer, params: pm.LoadSessionParams
) -> pm.LoadSessionResult | Awaitable[pm.LoadSessionResult]:
    return server.engine.load(params)


def session_resume(
    server: ThreadlineServer, params: pm.LoadSessionParams
) -> pm.LoadSessionResult | Awaitable[pm.LoadSessionResult]:
    return server.engine.resume(params)


def session_list(server: ThreadlineServer, params: pm.ListSessionsParams) -> pm.ListSessionsResult:
    return server.engine.list_sessions(params)


def session_close(server: ThreadlineServer, params: pm.SessionRef) -> Awaitable[pm.EmptyResult]:
    return server.engine.close(params.session_id)


def session_delete(server: ThreadlineServer, params: pm.SessionRef) -> Awaitable[pm.EmptyResult]:
    return server.engine.delete(params.session_id)


def session_set_config_option(
    server: ThreadlineServer, params: pm.SetConfigOptionParams
) -> pm.SetConfigOptionResult:
    return server.engine.set_config_option(params)


def session_fork(server: ThreadlineServer, params: pm.ForkParams) -> pm.ForkResult:
    return server.engine.fork(params)


def session_compact(
    server: ThreadlineServer, params: pm.CompactParams
) -> Awaitable[pm.CompactResult]:
    return server.engine.compact(params)


def session_set_title(server: ThreadlineServer, params: cat.SetTitleParams) -> pm.EmptyResult:
    return server.engine.set_title(params)


def session_archive(server: ThreadlineServer, params: cat.ArchiveParams) -> pm.EmptyResult:
    return server.engine.archive(params)


def session_set_tags(server: ThreadlineServer, params: cat.SetTagsParams) -> pm.EmptyResult:
    return server.engine.set_tags(params)


def session_search(server: ThreadlineServer, params: cat.SearchParams) -> cat.SearchResult:
    return server.engine.search(params)


def session_export(server: ThreadlineServer, params: cat.ExportParams) -> cat.ExportResult:
    return server.engine.export(params)


def session_import(server: ThreadlineServer, params: cat.ImportParams) -> cat.ImportResult:
    return server.engine.import_log(params)


CALLS: dict[str, Call] = {
    "initialize": initialize,
    "shutdown": shutdown,
    "session/new": session_new,
    "session/prompt": session_prompt,
    "session/interrupt": session_interrupt,
    "session/cancel": session_cancel,
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
    "session/set_title": session_set_title,
    "session/archive": session_archive,
    "session/set_tags": session_set_tags,
    "session/search": session_search,
    "session/export": session_export,
    "session/import": session_import,
}

ROUTES = routes(METHODS, CALLS)
"""Built at import: a method of the table without a call here (or the reverse) fails
loudly (``MethodTableError``)."""
