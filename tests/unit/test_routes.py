"""The server's calls and the protocol's method table are one table: a method without a
call, a call without a method, or a call that takes other params fails at import."""

from __future__ import annotations

import pytest

from threadline.rpc.routes import CALLS, ROUTES, MethodTableError, routes
from threadline_protocol import methods as pm
from threadline_protocol.methods import METHODS


def test_every_served_method_has_its_call() -> None:
    served = {n for n, s in METHODS.items() if s.dispatch in ("inline", "task", "notification")}
    assert set(ROUTES) == served
    assert {n: r.spec.dispatch for n, r in ROUTES.items()} == {
        n: METHODS[n].dispatch for n in served
    }


def test_a_method_without_a_call_fails_loudly() -> None:
    calls = {k: v for k, v in CALLS.items() if k != "session/fork"}
    with pytest.raises(MethodTableError, match="session/fork"):
        routes(METHODS, calls)


def test_a_call_without_a_method_fails_loudly() -> None:
    session_history = CALLS["session/history"]
    with pytest.raises(MethodTableError, match="session/rename"):
        routes(METHODS, {**CALLS, "session/rename": session_history})
    # nor may a call serve a method the client does not send, or one the connection serves
    with pytest.raises(MethodTableError, match="tool/call"):
        routes(METHODS, {**CALLS, "tool/call": session_history})
    with pytest.raises(MethodTableError, match="exit"):
        routes(METHODS, {**CALLS, "exit": session_history})


def test_a_call_taking_other_params_fails_loudly() -> None:
    session_history = CALLS["session/history"]
    with pytest.raises(MethodTableError, match="session/fork"):
        routes(METHODS, {**CALLS, "session/fork": session_history})


def test_the_protocol_table_refuses_a_method_without_a_dispatch() -> None:
    with pytest.raises(ValueError, match="needs a dispatch"):
        pm.MethodSpec(
            name="session/x",
            direction="client_to_server",
            kind="request",
            params=None,
            result=None,
            description="",
        )
    with pytest.raises(ValueError, match="cannot be dispatched"):
        pm.MethodSpec(
            name="session/x",
            direction="client_to_server",
            kind="notification",
            params=None,
            result=None,
            description="",
            dispatch="inline",
        )
