"""A protocol model as it goes on the wire (what ``rpc/server.py`` writes)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from threadline_protocol.base import Prewritten


def wire(model: BaseModel | None) -> Any:
    """A protocol model as it goes on the wire: the keys its builder set, by alias.
    What the builder left unset is left out (an optional the engine had nothing for),
    what it set to None is a JSON null (``forkedAtMessageId`` of a fork at the start).
    A ``Prewritten`` model's values are wire data already, handed to the outbox as is."""
    if model is None:
        return None
    if isinstance(model, Prewritten):
        return model.written()
    return model.model_dump(by_alias=True, exclude_unset=True)
