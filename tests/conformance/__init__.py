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

ROOT = Path(__file__).resolve().parents[2]
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
