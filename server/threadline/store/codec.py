"""How store backends turn payloads and text into what a database column accepts.

Shared by the SQLite and PostgreSQL stores so both write byte-identical JSON (the
migration command copies payloads verbatim between them).
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def safe_text(value: str | None) -> str | None:
    """A str a database can bind: lone surrogates (valid in JSON, not in UTF-8) replaced."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return value


def loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # written by the stdlib fallback (big integers)
        return json.loads(text)


def dumps(obj: Any) -> str:
    try:
        return orjson.dumps(obj).decode()
    except TypeError:  # beyond orjson: integers over 64 bits, lone surrogates
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
