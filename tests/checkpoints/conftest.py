"""Wire messages in this suite are checked against the schemas too."""

from tests.conformance import acp_conformance

__all__ = ["acp_conformance"]
