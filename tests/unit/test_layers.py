"""The import direction docs/architecture.md promises, checked on the source.

A layer may import itself, the layers the table below lists for it, the foundation
modules and the protocol package; anything else is a dependency pointing the wrong way
(an engine module reaching for the wire, a tool reaching into a session, the server
pulling in the client). Inside a layer the modules import one another without a cycle:
each can be read knowing only the ones it imports. Imports under ``TYPE_CHECKING`` (and
inside functions) count: a type-only cycle is still a cycle a reader has to untangle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "server" / "threadline"
PROTOCOL = ROOT / "protocol" / "threadline_protocol"
CLIENT = ROOT / "clients" / "python" / "threadline_client"

#: Plain modules every layer may use: version, settings, the user's config, logging.
FOUNDATION = frozenset({"threadline", "__version__", "settings", "userconfig", "redact", "logs"})

#: Which layers each layer may import (besides itself, FOUNDATION and the protocol).
ALLOWED: dict[str, frozenset[str]] = {
    # `python -m threadline serve`; the other commands live on top, in threadline_cli
    "__main__": frozenset({"rpc"}),
    # what `threadline models` and `threadline store` run
    "models_cmd": frozenset({"providers", "checkpoints"}),
    "store_cmd": frozenset({"store"}),
    # the wire; rpc/serve.py is the composition root that builds what the engine uses
    "rpc": frozenset({"engine", "providers", "tools", "store"}),
    "engine": frozenset({"providers", "tools", "store", "checkpoints"}),
    # the shadow git repositories of workspaces (docs/checkpoints.md): below the engine
    "checkpoints": frozenset(),
    "tools": frozenset({"providers"}),
    "providers": frozenset(),
    "store": frozenset(),
}


def _layer(module: str) -> str | None:
    """The layer a ``threadline…`` module belongs to; None for third-party modules."""
    parts = module.split(".")
    if parts[0] == "threadline_client":
        return "client"
    if parts[0] == "threadline_protocol":
        return "protocol"
    if parts[0] != "threadline":
        return None
    return parts[1] if len(parts) > 1 else "threadline"


def _module_name(path: Path, root: Path, package: str) -> tuple[str, str]:
    """(module, the package relative imports start from)."""
    rel = path.relative_to(root).with_suffix("")
    parts = [package, *rel.parts]
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def imports_of(path: Path, root: Path, package: str) -> Iterator[tuple[str, str, int]]:
    """(importing module, imported module, line) for every import in `path`."""
    module, base = _module_name(path, root, package)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield module, alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                yield module, node.module or "", node.lineno
                continue
            anchor = base.split(".")[: len(base.split(".")) - (node.level - 1)]
            if node.module:
                yield module, ".".join([*anchor, node.module]), node.lineno
            else:
                for alias in node.names:
                    yield module, ".".join([*anchor, alias.name]), node.lineno


def violations(root: Path, package: str) -> list[str]:
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        for module, target, line in imports_of(path, root, package):
            src, dst = _layer(module), _layer(target)
            if dst is None or src == dst:
                continue
            where = f"{path.relative_to(root)}:{line}: {module} imports {target}"
            if package in ("threadline_protocol", "threadline_client"):
                # the wire contract and the client stand apart from the server
                server = target == "threadline" or target.startswith("threadline.")
                if server or (package == "threadline_protocol" and dst == "client"):
                    found.append(where)
                continue
            assert src is not None
            if dst == "client":
                found.append(where)
            elif dst in FOUNDATION or dst == "protocol":
                if src in FOUNDATION and dst not in FOUNDATION | {"protocol"}:
                    found.append(where)
            elif src in FOUNDATION or dst not in ALLOWED.get(src, frozenset()):
                found.append(where)
    return found


def _modules(root: Path, package: str) -> dict[str, Path]:
    return {_module_name(path, root, package)[0]: path for path in sorted(root.rglob("*.py"))}


def _resolve(target: str, known: Mapping[str, Path]) -> str | None:
    """The module an import names: ``from .x import name`` names ``x`` (or ``x.name``
    when that is a module); an attribute of a package is the package."""
    parts = target.split(".")
    while parts:
        name = ".".join(parts)
        if name in known:
            return name
        parts.pop()
    return None


def cycles(root: Path, package: str) -> list[list[str]]:
    """Import cycles among the modules of one layer, each as the modules it runs
    through (sorted), found as the strongly connected components of the import graph."""
    known = _modules(root, package)
    graph: dict[str, set[str]] = {module: set() for module in known}
    for module, path in known.items():
        for _src, target, _line in imports_of(path, root, package):
            dst = _resolve(target, known)
            if dst is not None and dst != module and _layer(dst) == _layer(module):
                graph[module].add(dst)
    # Tarjan's algorithm, iterative: every component of more than one module is a cycle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_server_layers_import_downwards_only() -> None:
    assert violations(SERVER, "threadline") == []


def test_protocol_imports_nothing_of_the_server_or_client() -> None:
    assert violations(PROTOCOL, "threadline_protocol") == []


def test_the_python_client_speaks_to_the_server_only_over_the_wire() -> None:
    assert violations(CLIENT, "threadline_client") == []


def test_every_server_package_has_a_rule() -> None:
    packages = {p.name for p in SERVER.iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(ALLOWED), packages - set(ALLOWED)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from ...rpc.server import ThreadlineServer\n", True),  # engine reaching up
        ("from ..session import Session\n", False),  # inside the engine
        ("from ...store.base import SessionStore\n", False),  # downwards
        ("import threadline_client\n", True),  # the server pulling in the client
        ("from ... import settings\n", False),  # foundation
    ],
)
def test_the_check_sees_a_wrong_import(tmp_path: Path, source: str, expected: bool) -> None:
    module = tmp_path / "engine" / "sub" / "probe.py"
    module.parent.mkdir(parents=True)
    module.write_text(source, encoding="utf-8")
    assert bool(violations(tmp_path, "threadline")) is expected


@pytest.mark.parametrize(
    ("root", "package"),
    [(SERVER, "threadline"), (PROTOCOL, "threadline_protocol"), (CLIENT, "threadline_client")],
    ids=["server", "protocol", "client"],
)
def test_no_import_cycle_inside_a_layer(root: Path, package: str) -> None:
    assert cycles(root, package) == []


_PROBES: dict[str, dict[str, str]] = {
    "plain cycle": {"rpc/a.py": "from .b import B\n", "rpc/b.py": "from .a import A\n"},
    "type-only cycle": {
        "rpc/routes.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from .server import Server\n",
        "rpc/server.py": "from .routes import Route\n",
    },
    "cycle through a function's import": {
        "rpc/boot.py": "def serve() -> None:\n    from .serve import run\n",
        "rpc/serve.py": "from .boot import Prelude\n",
    },
    "three modules round": {
        "engine/a.py": "from . import b\n",
        "engine/b.py": "from .c import C\n",
        "engine/c.py": "from .a import A\n",
    },
    "across a subpackage": {
        "tools/x/__init__.py": "",
        "tools/x/one.py": "from ..top import T\n",
        "tools/top.py": "from .x.one import O\n",
    },
    "one way only": {"rpc/a.py": "from .b import B\n", "rpc/b.py": "import os\n"},
    "a chain": {
        "engine/a.py": "from .b import B\n",
        "engine/b.py": "from .c import C\n",
        "engine/c.py": "from ...store.base import S\n",
    },
    "between layers, not inside one": {
        "rpc/a.py": "from ..engine.b import B\n",
        "engine/b.py": "from ..rpc.a import A\n",
    },
}


@pytest.mark.parametrize(
    ("probe", "expected"),
    [
        ("plain cycle", [["threadline.rpc.a", "threadline.rpc.b"]]),
        ("type-only cycle", [["threadline.rpc.routes", "threadline.rpc.server"]]),
        ("cycle through a function's import", [["threadline.rpc.boot", "threadline.rpc.serve"]]),
        (
            "three modules round",
            [["threadline.engine.a", "threadline.engine.b", "threadline.engine.c"]],
        ),
        ("across a subpackage", [["threadline.tools.top", "threadline.tools.x.one"]]),
        ("one way only", []),
        ("a chain", []),
        # a cycle between layers is the direction check's to catch (an arrow points up)
        ("between layers, not inside one", []),
    ],
)
def test_the_check_sees_a_cycle(tmp_path: Path, probe: str, expected: list[list[str]]) -> None:
    for name, source in _PROBES[probe].items():
        module = tmp_path / name
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text(source, encoding="utf-8")
    assert cycles(tmp_path, "threadline") == expected
