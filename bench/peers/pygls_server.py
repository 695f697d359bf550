"""A bare pygls 2 ``JsonRPCServer``: the floor Threadline's own pygls wiring is held to.

It answers ``initialize``, opens sessions and, on ``session/prompt``, sends one
``session/update`` notification per delta of the scripted model, in exactly the shape
Threadline sends (``agent_message_chunk`` with ``messageId`` and ``_meta``), through
``protocol.notify`` as any pygls server would. Nothing is validated, stored, coalesced
or moved off the event loop: it is what "no features at all" costs.

Params stay plain dicts (the one change to pygls' defaults), as they do in Threadline.

Run: ``python bench/peers/pygls_server.py [--stamp]``
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

import cattrs
from peer_script import deltas, steps_of
from pygls.protocol import JsonRPCProtocol, default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage
from pygls.server import JsonRPCServer

STAMP = "--stamp" in sys.argv


def _plain(obj: dict[str, Any], cls: type) -> Any:
    return cls(**{"params": None, **obj})


def converter() -> cattrs.Converter:
    conv = default_converter()
    conv.register_structure_hook(JsonRPCRequestMessage, _plain)
    conv.register_structure_hook(JsonRPCNotification, _plain)
    return conv


server = JsonRPCServer(JsonRPCProtocol, converter)
sessions: dict[str, list[dict[str, Any]]] = {}


@server.feature("initialize")
def initialize(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "protocolVersion": 1,
        "agentCapabilities": {"loadSession": False},
        "authMethods": [],
        "agentInfo": {"name": "bare-pygls", "version": "0"},
    }


@server.feature("shutdown")
def shutdown(params: Any) -> None:
    return None


@server.feature("session/new")
def session_new(params: dict[str, Any]) -> dict[str, Any]:
    model = ((params.get("_meta") or {}).get("threadline") or {}).get("model")
    session_id = f"sess_{uuid.uuid4().hex}"
    sessions[session_id] = steps_of(model)
    return {"sessionId": session_id}


@server.feature("session/prompt")
async def session_prompt(params: dict[str, Any]) -> dict[str, Any]:
    session_id = params["sessionId"]
    message_id = f"msg_{uuid.uuid4().hex}"
    meta = {"threadline": {"turnId": "a1"}}
    notify = server.protocol.notify
    async for text in deltas(sessions[session_id], STAMP):
        notify(
            "session/update",
            {
                "sessionId": session_id,
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": message_id,
                    "content": {"type": "text", "text": text},
                    "_meta": meta,
                },
            },
        )
    return {"stopReason": "end_turn"}


if __name__ == "__main__":
    server.start_io()
