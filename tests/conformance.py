"""Is every message the sidecar sends what a third-party client may expect?

Two yardsticks, with ``jsonschema``:

* ACP's official schema (``protocol/acp/v1/schema.json``, vendored at a pinned
  version): the envelope, errors, and the params or result of every ACP method
  (``initialize``, ``session/*``, ``fs/*``, ``session/request_permission``,
  ``session/update`` with each update kind, ``$/cancel_request``);
* Threadline's own schema (``protocol/schema.json``): every method of its table,
  so the extension methods (``session/fork``, ``session/compact``, ``tool/call``…)
  and the ``_meta.threadline`` blocks Threadline adds to ACP's messages.

A message neither schema knows is a problem too. The test clients of
``tests/support.py`` feed every message they receive to :class:`Conformance`; the
protocol and end-to-end suites turn that on and fail a test that saw a problem.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

ROOT = Path(__file__).resolve().parent.parent
ACP_SCHEMA = ROOT / "protocol" / "acp" / "v1" / "schema.json"
THREADLINE_SCHEMA = ROOT / "protocol" / "schema.json"


@functools.cache
def _acp() -> dict[str, Any]:
    return json.loads(ACP_SCHEMA.read_text())


@functools.cache
def _threadline() -> dict[str, Any]:
    return json.loads(THREADLINE_SCHEMA.read_text())


@functools.cache
def _validator(which: str, ref: str, kind: str | None = None) -> Draft202012Validator:
    doc = _acp() if which == "acp" else _threadline()
    defs = doc["$defs"] if kind is None else _narrowed(doc["$defs"], kind)
    return Draft202012Validator({"$ref": ref, "$defs": defs})


def _narrowed(node: Any, kind: str) -> Any:
    """The definitions with the ``sessionUpdate`` union cut down to its ``kind`` branch.
    Both schemas mark that union with a discriminator, so the result is the same as
    trying every branch, only some twenty times faster (it runs on every chunk)."""
    if isinstance(node, list):
        return [_narrowed(x, kind) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _narrowed(v, kind) for k, v in node.items()}
    disc = node.get("discriminator")
    if isinstance(disc, dict) and disc.get("propertyName") == "sessionUpdate" and "oneOf" in node:
        target = disc.get("mapping", {}).get(kind)
        branches = [
            b
            for b in out["oneOf"]
            if b.get("$ref") == target
            or b.get("properties", {}).get("sessionUpdate", {}).get("const") == kind
        ]
        if branches:
            out["oneOf"] = branches
    return out


@functools.cache
def acp_methods() -> dict[tuple[str, str], str]:
    """``(method, "params" | "result")`` → the ACP definition that describes it."""
    out: dict[tuple[str, str], str] = {}
    for name, d in _acp()["$defs"].items():
        method = d.get("x-method")
        if method is None:
            continue
        part = "result" if name.endswith("Response") else "params"
        out[(method, part)] = name
    return out


def _closest(error: ValidationError) -> ValidationError:
    """For "not valid under any of the given schemas", the reason of the branch the
    value meant to match: the one whose discriminator (a ``const``) it did not miss."""
    if not error.context:
        return error
    branches: dict[Any, list[ValidationError]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    meant = [errs for errs in branches.values() if all(x.validator != "const" for x in errs)]
    return _closest(best_match(meant[0] if len(meant) == 1 else error.context))


def _problems(which: str, ref: str, value: Any, where: str) -> list[str]:
    kind = _update_kind(value)
    errors = sorted(_validator(which, ref, kind).iter_errors(value), key=lambda e: list(e.path))
    out: list[str] = []
    for e in errors[:5]:
        closest = _closest(e)
        path = "/".join(map(str, closest.absolute_path)) or "."
        out.append(f"{where}: {which} {ref.rsplit('/', 1)[-1]}: {path}: {closest.message[:300]}")
    return out


def _update_kind(value: Any) -> str | None:
    """The ``sessionUpdate`` of a ``session/update``'s params, if it names one."""
    if isinstance(value, dict):
        update = value.get("update")
        if isinstance(update, dict) and isinstance(update.get("sessionUpdate"), str):
            return update["sessionUpdate"]
    return None


def check_acp(method: str, part: str, value: Any) -> list[str]:
    """Problems of ``value`` as the params or result of an ACP ``method``."""
    name = acp_methods().get((method, part))
    if name is None:
        return []
    return _problems("acp", f"#/$defs/{name}", value, f"{method} {part}")


def check_threadline(method: str, part: str, value: Any) -> list[str]:
    """Problems of ``value`` as the params or result of a Threadline ``method``."""
    spec = _threadline()["methods"].get(method)
    if spec is None:
        return []
    ref = spec[part]
    if ref is None:
        return [] if value is None else [f"{method} {part}: threadline: expected null"]
    return _problems("threadline", ref["$ref"], value, f"{method} {part}")


def known(method: str) -> bool:
    return method in _threadline()["methods"] or any(m == method for m, _ in acp_methods())


class Conformance:
    """Checks the messages one client receives; keeps every problem found."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.pending: dict[Any, str] = {}
        self.seen: Counter[str] = Counter()

    def sent(self, message: Any) -> None:
        """A message the client sent: remember which method each request id is for."""
        if isinstance(message, dict) and "id" in message and isinstance(message.get("method"), str):
            with contextlib.suppress(TypeError):  # an unhashable id (malformed input tests)
                self.pending[message["id"]] = message["method"]

    def received(self, message: Any) -> None:
        self.problems.extend(self.check(message))

    def check(self, message: Any) -> list[str]:
        if not isinstance(message, dict):
            return [f"not a JSON-RPC object: {message!r:.200}"]
        if message.get("jsonrpc") != "2.0":
            return [f"jsonrpc is not 2.0: {message!r:.200}"]
        method = message.get("method")
        if isinstance(method, str):
            part = "params"
            value = message.get("params")
            label = method
            if not known(method):
                return [f"{method}: a method neither ACP nor Threadline defines"]
        else:
            problems = _problems("acp", "#/$defs/RequestId", message.get("id"), "response id")
            if "error" in message:
                self.seen["error"] += 1
                self._forget(message.get("id"))
                return problems + _problems("acp", "#/$defs/Error", message["error"], "error")
            if "result" not in message:
                return [*problems, f"a response with neither result nor error: {message!r:.200}"]
            method = self._forget(message.get("id"))
            if method is None:
                return problems  # an answer to a request this client did not record
            part, value, label = "result", message["result"], f"{method} result"
        if method == "session/update" and isinstance(value, dict):
            label = f"session/update {value.get('update', {}).get('sessionUpdate')}"
        self.seen[label] += 1
        return check_acp(method, part, value) + check_threadline(method, part, value)

    def _forget(self, msg_id: Any) -> str | None:
        try:
            return self.pending.pop(msg_id, None)
        except TypeError:
            return None


@pytest.fixture(autouse=True)
def acp_conformance() -> Iterator[None]:
    """Check every message a suite's sidecars send; a suite opts in by importing this
    fixture into its ``conftest.py``."""
    from tests import support

    checks = support.CHECKS = []
    try:
        yield
    finally:
        support.CHECKS = None
    problems = [p for c in checks for p in c.problems]
    assert not problems, "messages that break the protocol:\n" + "\n".join(problems[:20])


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
    """``python -m tests.conformance WIRE.jsonl``: check a recorded conversation (one
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
    import sys

    raise SystemExit(main(sys.argv[1:]))
