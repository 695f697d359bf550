"""What ``initialize`` answers: the version, the configured models, what the agent can do.

Kept apart from the engine (and free of pydantic and the store) because the server
answers ``initialize`` before importing those (``rpc/boot.py``), so an editor's
sidecar is ready as soon as Python is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from threadline_protocol.versions import PROTOCOL_VERSION, THREADLINE_PROTOCOL_VERSION

if TYPE_CHECKING:
    from ..providers.registry import ProviderRegistry


def initialize_result(server_version: str, providers: ProviderRegistry) -> dict[str, Any]:
    info = {"name": "threadline", "title": "Threadline", "version": server_version}
    models = providers.available()
    for m in models:
        m["images"] = providers.images(m["modelId"]).sees
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            # image: some model sees images, so a client lets its user attach them;
            # whether a session's model does is its entry's `images` in `models` (a
            # session on a text-only model still takes them, kept, and its model reads
            # placeholders: `engine/images.py`)
            "promptCapabilities": {
                "image": any(m["images"] for m in models),
                "audio": False,
                "embeddedContext": True,
            },
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {
                "list": {},
                "resume": {},
                "close": {},
                "delete": {},
                "fork": {},
                "additionalDirectories": {},
            },
            "_meta": {
                "threadline": {
                    "protocolVersion": THREADLINE_PROTOCOL_VERSION,
                    "interrupt": True,
                    "compact": True,
                    "history": True,
                    "fork": True,
                    "models": models,
                    "defaultModel": providers.default_model,
                    "promptQueueing": True,
                }
            },
        },
        "authMethods": [],
        "agentInfo": info,
    }
