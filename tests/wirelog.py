"""Checks a recorded conversation with the sidecar, both ways, against the schemas the
project vendors (``tests.conformance``): ``python -m tests.wirelog WIRE.jsonl``.

For tests that drive the sidecar with another implementation than the suites'
clients (the ACP TypeScript SDK, in ``clients/typescript/test/acpSdkWork.test.mts``),
which record every message as it crossed the wire.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from tests.conformance import Conformance, _problems, check_acp, check_threadline, known


def check_exchange(exchange: list[tuple[str, Any]]) -> list[str]:
    """Problems of a whole conversation, both ways: ``(side, message)`` in the order
    they crossed the wire, ``side`` being ``"client"`` or ``"agent"`` (who wrote it).
    The agent's messages are checked as :class:`Conformance` checks them; the client's
    requests, notifications and answers to the agent's requests against the same two
    schemas, so a test that drives the sidecar with another implementation (the ACP
    TypeScript SDK) validates every message of it."""
    agent = Conformance()
    asked: dict[Any, str] = {}  # the agent's requests the client has not answered yet
    problems: list[str] = []
    for side, message in exchange:
        if side == "agent":
            if isinstance(message, dict) and "id" in message and "method" in message:
                with contextlib.suppress(TypeError):
                    asked[message["id"]] = message["method"]
            problems += [f"agent: {p}" for p in agent.check(message)]
            continue
        agent.sent(message)
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            problems.append(f"client: not a JSON-RPC 2.0 object: {message!r:.200}")
            continue
        method = message.get("method")
        if isinstance(method, str):
            part, value = "params", message.get("params")
        elif "error" in message:
            problems += _problems("acp", "#/$defs/Error", message["error"], "client error")
            continue
        else:
            method, part, value = (
                asked.pop(message.get("id"), None),
                "result",
                message.get("result"),
            )
            if method is None:
                problems.append(f"client: an answer to no request: {message!r:.200}")
                continue
        if not known(method):
            problems.append(f"client: {method}: a method neither ACP nor Threadline defines")
            continue
        found = check_acp(method, part, value) + check_threadline(method, part, value)
        problems += [f"client: {p}" for p in found]
    return problems


def main(argv: list[str]) -> int:
    """``python -m tests.wirelog WIRE.jsonl``: check a recorded conversation (one
    ``{"side": "client"|"agent", "message": …}`` per line); prints each problem and
    what was checked, exits 1 on a problem."""
    exchange: list[tuple[str, Any]] = []
    for line in Path(argv[0]).read_text().splitlines():
        if line.strip():
            entry = json.loads(line)
            exchange.append((entry["side"], entry["message"]))
    problems = check_exchange(exchange)
    for p in problems:
        print(p)
    print(f"checked {len(exchange)} messages: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
