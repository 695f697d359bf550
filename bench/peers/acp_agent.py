"""A minimal agent on the ACP Python SDK (``agent-client-protocol``), for comparison.

It implements ``initialize``, ``session/new`` and ``session/prompt`` the way the SDK
intends (typed pydantic models in, ``conn.session_update`` out) and streams the same
scripted deltas Threadline and the bare pygls peer stream, one ``agent_message_chunk``
each. It speaks newline-delimited JSON, as every ACP agent does.

Run: ``python bench/peers/acp_agent.py [--stamp]``
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from typing import Any

from acp import (
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
)
from acp.interfaces import Client
from acp.schema import AgentCapabilities, AgentMessageChunk, Implementation, TextContentBlock
from peer_script import deltas, steps_of

STAMP = "--stamp" in sys.argv


class BenchAgent:
    def __init__(self) -> None:
        self._conn: Client | None = None
        self._sessions: dict[str, list[dict[str, Any]]] = {}

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kw: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name="bench-acp-agent", version="0"),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kw: Any) -> NewSessionResponse:
        model = (kw.get("threadline") or {}).get("model")
        session_id = f"sess_{uuid.uuid4().hex}"
        self._sessions[session_id] = steps_of(model)
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, session_id: str, prompt: Any, **kw: Any) -> PromptResponse:
        assert self._conn is not None
        message_id = f"msg_{uuid.uuid4().hex}"
        meta = {"threadline": {"turnId": "a1"}}
        async for text in deltas(self._sessions[session_id], STAMP):
            await self._conn.session_update(
                session_id,
                AgentMessageChunk(
                    session_update="agent_message_chunk",
                    content=TextContentBlock(type="text", text=text),
                    message_id=message_id,
                    field_meta=meta,
                ),
            )
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kw: Any) -> None:
        return None


if __name__ == "__main__":
    asyncio.run(run_agent(BenchAgent()))
