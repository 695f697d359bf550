"""Base model for everything on the wire: camelCase aliases, lenient on input.

Models are built lazily (``defer_build``) so importing the protocol costs little at
start-up; a model is compiled the first time a handler validates with it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """Wire shape: camelCase keys, unknown keys kept (ACP lets peers add fields)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        defer_build=True,
        serialize_by_alias=True,
    )

    def wire(self) -> dict[str, Any]:
        """The JSON-ready dict as it goes on the wire (aliases, no unset optionals)."""
        try:
            return self.model_dump(by_alias=True, exclude_none=True, mode="json")
        except ValueError:
            # pydantic's JSON mode refuses a lone surrogate, which a client may send as
            # a valid JSON escape; what came off the wire is JSON-ready as it is, and
            # the outbox and the store escape such strings.
            return self.model_dump(by_alias=True, exclude_none=True)


class StrictWireModel(WireModel):
    """For params the server validates: unknown keys are ignored, not echoed."""

    model_config = ConfigDict(extra="ignore")


def meta_field() -> Any:
    """ACP's extension slot, ``_meta`` on the wire."""
    return Field(default=None, alias="_meta")


class Prewritten(WireModel):
    """A message its sender fills, through ``model_construct``, with values that are
    already wire data (JSON text its writer splices, plain dicts): written field by
    field as they are (:meth:`written`), without pydantic's serializer. So the server's
    long histories are copied, not serialised again, and the first one builds no
    schema. Validating one (a client reading it) is as for any model."""

    def written(self) -> dict[str, Any]:
        """The fields the sender set, under their wire names, values as they are."""
        fields = type(self).model_fields
        return {fields[name].alias or name: getattr(self, name) for name in self.model_fields_set}
