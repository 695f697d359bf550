"""Every message the sidecar sends in this suite is checked against ACP's official
schema and Threadline's own (``tests/conformance.py``)."""

from tests.support import acp_conformance as acp_conformance
