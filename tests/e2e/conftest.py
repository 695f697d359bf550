"""Every message the sidecar sends in this suite is checked against ACP's official
schema and Threadline's own (``tests/conformance.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import support


@pytest.fixture(autouse=True)
def acp_conformance() -> Iterator[None]:
    checks = support.CHECKS = []
    try:
        yield
    finally:
        support.CHECKS = None
    problems = [p for c in checks for p in c.problems]
    assert not problems, "messages that break the protocol:\n" + "\n".join(problems[:20])
