"""What an OpenAI-compatible server was found to do, remembered in the home folder.

Servers that speak the chat completions API differ in ways a user cannot guess:
llama-cpp-python's ``chatml-function-calling`` format drops ``role: "tool"`` messages
and answers a streamed request that offers tools with an empty stream. The provider
learns both by itself (:mod:`.openai_compat`) and records them here, per server and
model, so the next process starts right and ``threadline models`` can show them.

The file is small JSON (``servers.json`` in ``THREADLINE_HOME``), read fresh before
each update and replaced atomically, so sidecars sharing a home never tear it.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

FILE_NAME = "servers.json"


@dataclass(frozen=True, slots=True)
class ServerTraits:
    """``None``: not known yet (the provider assumes the standard behaviour)."""

    stream_tools: bool | None = None
    """Whether a streamed request that offers tools gets its answer streamed."""
    tool_messages: bool | None = None
    """Whether ``role: "tool"`` messages reach the model (else: sent as user messages)."""
    learned_at: str | None = None

    def describe(self) -> str:
        parts: list[str] = []
        if self.stream_tools is not None:
            parts.append("streams tool calls" if self.stream_tools else "tool calls not streamed")
        if self.tool_messages is not None:
            parts.append(
                "tool results as tool messages"
                if self.tool_messages
                else "tool results as user messages"
            )
        return "; ".join(parts)

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.stream_tools is not None:
            out["streamTools"] = self.stream_tools
        if self.tool_messages is not None:
            out["toolMessages"] = self.tool_messages
        if self.learned_at is not None:
            out["learnedAt"] = self.learned_at
        return out

    @classmethod
    def from_wire(cls, data: Any) -> ServerTraits:
        if not isinstance(data, dict):
            return cls()
        stream = data.get("streamTools")
        tool = data.get("toolMessages")
        at = data.get("learnedAt")
        return cls(
            stream if isinstance(stream, bool) else None,
            tool if isinstance(tool, bool) else None,
            at if isinstance(at, str) else None,
        )


def server_key(base_url: str | None, model: str) -> str:
    return f"{(base_url or 'https://api.openai.com/v1').rstrip('/')}#{model}"


class TraitStore:
    """The learned traits of every server, keyed by :func:`server_key`."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()

    @classmethod
    def in_home(cls) -> TraitStore:
        from ..settings import data_dir

        return cls(data_dir() / FILE_NAME)

    def _read(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable %s: %s", self.path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> ServerTraits:
        return ServerTraits.from_wire(self._read().get(key))

    def update(self, key: str, **changes: bool) -> ServerTraits:
        """Record what was learned; the file is rewritten atomically."""
        with self._lock:
            data = self._read()
            old = ServerTraits.from_wire(data.get(key))
            new = ServerTraits(
                changes.get("stream_tools", old.stream_tools),
                changes.get("tool_messages", old.tool_messages),
                datetime.now(UTC).isoformat(timespec="seconds"),
            )
            data[key] = new.wire()
            if self.path is not None:
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".servers-")
                    with os.fdopen(fd, "w", encoding="utf-8") as f:
                        json.dump(data, f, indent=2, sort_keys=True)
                    os.replace(tmp, self.path)
                except OSError as exc:
                    log.warning("could not record server traits in %s: %s", self.path, exc)
            return new


def tool_results_option(value: Any) -> Literal["native", "user", "auto"]:
    """A model's ``tool_results`` setting; anything but a hand setting is learned."""
    return value if value in ("native", "user") else "auto"


def optional_bool(value: Any) -> bool | None:
    """A hand setting such as ``stream_tools``; ``None`` (learn it) when not a bool."""
    return value if isinstance(value, bool) else None
