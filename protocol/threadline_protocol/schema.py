"""Generate ``protocol/schema.json`` from the models (the one source of the wire shapes).

``python -m threadline_protocol.schema`` rewrites the file; ``--check`` exits 1 when
the checked-in file differs from what the models generate.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from .errors import ErrorCode, ProviderErrorData, ToolLoopErrorData
from .messages import Message
from .methods import (
    METHODS,
    PROTOCOL_VERSION,
    THREADLINE_PROTOCOL_VERSION,
    ThreadlineSessionOptions,
    ToolDefinition,
)
from .updates import SessionNotification

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema.json"


def build_schema() -> dict[str, Any]:
    models: list[type[BaseModel]] = [
        Message,
        SessionNotification,
        ProviderErrorData,
        ToolLoopErrorData,
        ThreadlineSessionOptions,
        ToolDefinition,
    ]
    for spec in METHODS.values():
        for m in (spec.params, spec.result):
            if m is not None and m not in models:
                models.append(m)
    _, top = models_json_schema([(m, "validation") for m in models], ref_template="#/$defs/{model}")
    methods = {
        name: {
            "direction": spec.direction,
            "kind": spec.kind,
            "description": spec.description,
            "params": {"$ref": f"#/$defs/{spec.params.__name__}"} if spec.params else None,
            "result": {"$ref": f"#/$defs/{spec.result.__name__}"} if spec.result else None,
        }
        for name, spec in sorted(METHODS.items())
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Threadline wire protocol",
        "acpProtocolVersion": PROTOCOL_VERSION,
        "threadlineProtocolVersion": THREADLINE_PROTOCOL_VERSION,
        "errorCodes": {e.name: int(e) for e in ErrorCode},
        "methods": methods,
        "$defs": top.get("$defs", {}),
    }


def render() -> str:
    return json.dumps(build_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if schema.json is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = SCHEMA_PATH.read_text() if SCHEMA_PATH.exists() else ""
        if current != text:
            print(
                f"{SCHEMA_PATH} is stale: run python -m threadline_protocol.schema", file=sys.stderr
            )
            return 1
        return 0
    SCHEMA_PATH.write_text(text)
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
