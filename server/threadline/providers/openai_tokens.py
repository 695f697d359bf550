"""Counting a request's tokens for an OpenAI-compatible model.

tiktoken is used only when the encoding's file is already in tiktoken's local cache:
tiktoken downloads encodings on first use and this program must never download at run
time, so without a cached file the count is the rough estimate.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

from .base import ChatRequest, image_tokens, rough_token_count

log = logging.getLogger(__name__)


def count_tokens(request: ChatRequest, name: str | None) -> int:
    """Tokens of ``request`` in the tiktoken encoding ``name``, or the rough count
    when that encoding is unknown or not cached."""
    encoding = offline_encoding(name)
    if encoding is None:
        return rough_token_count(request)
    n = 3
    for m in request.messages:
        n += 4 + len(encoding.encode(m.content, disallowed_special=()))
        for c in m.tool_calls:
            n += len(encoding.encode(c.raw_arguments or json.dumps(c.arguments))) + 8
    for t in request.tools:
        n += len(encoding.encode(t.description + json.dumps(t.parameters))) + 8
    return n + image_tokens(request)


def encoding_name(model: str) -> str | None:
    try:
        from tiktoken.model import encoding_name_for_model
    except ImportError:
        return None
    try:
        return encoding_name_for_model(model)
    except KeyError:
        return None


@functools.cache
def offline_encoding(name: str | None) -> Any:
    """The tiktoken encoding ``name`` if it loads from the local cache, else None.

    tiktoken fetches encoding files over HTTP on first use; while loading here its
    downloader is replaced by one that refuses, so a missing file means the rough
    count instead of a network call.
    """
    if not name:
        return None
    try:
        import tiktoken
        import tiktoken.load as tiktoken_load
    except ImportError:
        return None
    fetch = tiktoken_load.read_file

    def refuse_download(blobpath: str) -> bytes:
        if blobpath.startswith(("http://", "https://")):
            raise OSError(f"not downloading {blobpath}: tiktoken encodings must be cached")
        return fetch(blobpath)

    tiktoken_load.read_file = refuse_download
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:
        log.info("tiktoken encoding %s unavailable offline (%s); using a rough count", name, exc)
        return None
    finally:
        tiktoken_load.read_file = fetch
