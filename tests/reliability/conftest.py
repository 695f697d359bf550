"""Fixtures of the reliability suites."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.reliability.zygote import Zygote


@pytest.fixture(scope="session")
def zygote() -> Iterator[Zygote]:
    """One fork server for every test that restarts sidecars many times."""
    z = Zygote()
    try:
        yield z
    finally:
        z.close()
