"""The conformance suite: a real ``threadline serve`` per case, every message checked
both ways (``wire.py``), each test tagged with the requirement it checks
(``requirements.py``) and the run summarised per tier."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.requirements import REQUIREMENTS
from tests.conformance.wire import Agent

pytestmark = pytest.mark.timeout(90)

_OUTCOMES: Counter[tuple[str, str]] = Counter()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requirement(id): the conformance requirement a test checks")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call" and not (report.when == "setup" and report.skipped):
        return
    for rid in getattr(report, "requirements", ()):
        _OUTCOMES[(REQUIREMENTS[rid].tier, report.outcome)] += 1


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report = outcome.get_result()
    report.requirements = [m.args[0] for m in item.iter_markers("requirement")]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _OUTCOMES:
        return
    parts = [f"{tier}: {n} {how}" for (tier, how), n in sorted(_OUTCOMES.items())]
    terminalreporter.write_line("conformance by tier: " + ", ".join(parts))


@pytest.fixture
async def agents(tmp_path: Path) -> AsyncIterator[Callable[[], Any]]:
    """Start sidecars on one data folder; each is checked, and closed, at the end."""
    started: list[Agent] = []

    async def start() -> Agent:
        agent = await Agent.start(tmp_path / "home")
        started.append(agent)
        return agent

    yield start
    for agent in started:
        await agent.close()
    problems = [p for a in started for p in a.checks.problems + a.checks.sent_problems]
    assert not problems, "messages that break the protocol:\n" + "\n".join(problems[:20])
