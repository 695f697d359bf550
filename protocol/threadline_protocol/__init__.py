"""Threadline's wire contract: the executable form of PROTOCOL.md.

Submodules hold the models; this package re-exports the names clients use most.
"""

from .base import WireModel
from .errors import ErrorCode
from .methods import METHODS, PROTOCOL_VERSION, THREADLINE_PROTOCOL_VERSION

__all__ = ["METHODS", "PROTOCOL_VERSION", "THREADLINE_PROTOCOL_VERSION", "ErrorCode", "WireModel"]
