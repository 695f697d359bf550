"""Threadline's wire contract: the executable form of docs/protocol.md.

Submodules hold the models; this package re-exports the names clients use most. The
models are imported on first use of those names, so a submodule that needs no pydantic
(``versions``) can be imported alone: the server answers ``initialize`` that way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .versions import PROTOCOL_VERSION, THREADLINE_PROTOCOL_VERSION

if TYPE_CHECKING:
    from .base import WireModel
    from .errors import ErrorCode
    from .methods import METHODS

__all__ = ["METHODS", "PROTOCOL_VERSION", "THREADLINE_PROTOCOL_VERSION", "ErrorCode", "WireModel"]

_LAZY = {"WireModel": "base", "ErrorCode": "errors", "METHODS": "methods"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
