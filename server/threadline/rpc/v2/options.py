"""A session's config options as v2 has them: one shape for session results and for
``config_option_update`` alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadline_protocol import acp_v2 as v2
from threadline_protocol import methods as pm


def v2_options(options: Sequence[pm.SessionConfigOption]) -> list[v2.SessionConfigOptionV2]:
    """v1's options as v2 has them (``configId`` for ``id``)."""
    return [
        v2.SessionConfigOptionV2(
            config_id=o.id,
            name=o.name,
            type="select",
            current_value=o.current_value,
            options=[_choice(c) for c in o.options],
            **_given(description=o.description, category=o.category),
        )
        for o in options
    ]


def _choice(choice: pm.ConfigSelectOption) -> v2.ConfigSelectOptionV2:
    return v2.ConfigSelectOptionV2(
        value=choice.value, name=choice.name, **_given(description=choice.description)
    )


def _given(**fields: Any) -> dict[str, Any]:
    """The optional fields that have a value (left out, not null, on the wire)."""
    return {k: v for k, v in fields.items() if v is not None}
