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


def test_the_models_a_window_opens_with_are_built_while_the_loop_is_idle() -> None:
    """A fresh sidecar builds the params and result models of the first requests
    (`routes.OPENING`) while its connection is idle (none while a request is served
    or a replay written), one per turn of its loop (`serve.build_when_idle`): a
    request that arrives meanwhile is served after one of them, not after all. In a
    fresh interpreter: this one may have built them already."""
    import subprocess
    import sys

    script = """
import asyncio
from threadline.rpc.routes import ROUTES, unbuilt_models
from threadline.rpc.serve import build_when_idle

load = ROUTES["session/load"].spec.params
models = unbuilt_models()
assert load in models and len(models) > 2, models
order = []
loop = asyncio.new_event_loop()
waiting = list(models)
loop.call_soon(build_when_idle, loop, waiting, lambda: False)  # never idle
loop.run_until_complete(asyncio.sleep(0.12))
assert not any(m.__pydantic_complete__ for m in models), "built while busy"
waiting.clear()  # that chain ends at its next look
loop.call_soon(build_when_idle, loop, list(models), lambda: True)
loop.call_soon(lambda: order.append(sum(m.__pydantic_complete__ for m in models)))
for _ in range(len(models) + 2):
    loop.run_until_complete(asyncio.sleep(0))
assert order == [1], order
assert all(m.__pydantic_complete__ for m in models) and unbuilt_models() == []
print("ok")
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.stdout.strip() == "ok", out.stderr
