"""Every message the sidecar sends in this suite is checked against ACP's official
schema and Threadline's own (``tests/conformance/__init__.py``)."""

from tests.conformance import acp_conformance

__all__ = ["acp_conformance"]
