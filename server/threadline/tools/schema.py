"""Check a model's tool arguments against the tool's JSON Schema before running it."""

from __future__ import annotations

from typing import Any

from .base import Tool


def argument_problem(tool: Tool | None, arguments: dict[str, Any]) -> str | None:
    """The first way ``arguments`` break the tool's schema, in words; None when valid.

    A schema the validator cannot read is not the model's fault: the call goes ahead.
    """
    if tool is None:
        return None
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        validator = Draft202012Validator(tool.parameters)
        error = next(iter(validator.iter_errors(arguments)), None)
    except SchemaError:
        return None
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where + ': ' if where else ''}{error.message}"
