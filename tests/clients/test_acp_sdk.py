"""The newline-delimited (ACP) framing path, driven by the official ACP Python SDK.

Zed and the other ACP editors speak one JSON object per line; the SDK
(``agent-client-protocol``) is the reference client for that framing, so if it can
initialize, open a session, stream a prompt, answer a permission request and cancel a
turn against the real sidecar, an ACP editor can too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, BinaryIO

import acp  # pip install agent-client-protocol (a test dependency)
import pytest
from acp import schema

from tests.support import SERVER_COMMAND, scripted

PAUSE = {"sleep": 0.05}  # deltas may be coalesced; pauses keep them apart
HELLO = scripted([{"text": "Hello"}, PAUSE, {"text": ", "}, PAUSE, {"text": "Zed"}, {"text": "!"}])
HANG = scripted([{"text": "partial "}, {"text": "answer"}, {"hang": True}])
GUARDED = scripted(
    [{"tool_call": {"name": "deploy", "arguments": {"to": "prod"}, "id": "call_deploy"}}],
    [{"text": "Not deployed."}],
)
GUARDED_TOOL = {"name": "deploy", "description": "Deploy the app", "needsApproval": True}


class RecordingClient:
    """An ACP client that keeps every ``session/update`` in arrival order and answers
    permission requests with a fixed option (or ``cancelled``)."""

    def __init__(self, permission_option: str | None = None) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permission_requests: list[tuple[str, Any, list[Any]]] = []
        self.permission_option = permission_option
        self.first_chunk = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        if isinstance(update, schema.AgentMessageChunk):
            self.first_chunk.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        self.permission_requests.append((session_id, tool_call, options))
        if self.permission_option is None:
            outcome: Any = schema.DeniedOutcome(outcome="cancelled")
        else:
            outcome = schema.AllowedOutcome(outcome="selected", option_id=self.permission_option)
        return schema.RequestPermissionResponse(outcome=outcome)

    def chunks(self, session_id: str) -> list[Any]:
        return [
            u
            for sid, u in self.updates
            if sid == session_id and isinstance(u, schema.AgentMessageChunk)
        ]

    def text(self, session_id: str) -> str:
        return "".join(
            c.content.text
            for c in self.chunks(session_id)
            if isinstance(c.content, schema.TextContentBlock)
        )


def _stderr_log(home: Path) -> BinaryIO:
    """The sidecar's stderr goes to a file in its home, kept for a failing test's reader."""
    home.mkdir(parents=True, exist_ok=True)
    return (home / "stderr.log").open("wb")


@asynccontextmanager
async def acp_sidecar(
    home: Path, client: RecordingClient | None = None, **connection: Any
) -> AsyncIterator[tuple[Any, RecordingClient]]:
    """Spawn ``threadline serve`` through the SDK and initialize it, as Zed does."""
    recorder = client or RecordingClient()
    env = {"THREADLINE_HOME": str(home), "THREADLINE_LOG_LEVEL": "WARNING"}
    with _stderr_log(home) as err:
        async with acp.spawn_agent_process(
            recorder,
            SERVER_COMMAND[0],
            *SERVER_COMMAND[1:],
            env=env,
            transport_kwargs={"stderr": err},
            **connection,
        ) as (conn, _proc):
            yield conn, recorder


async def test_initialize_over_newline_framing(home: Path) -> None:
    async with acp_sidecar(home) as (conn, _):
        init = await asyncio.wait_for(
            conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_info=schema.Implementation(name="acp-sdk-test", version="0"),
            ),
            30,
        )
        assert init.protocol_version == 1
        caps = init.agent_capabilities
        assert caps is not None and caps.load_session is True
        assert init.agent_info is not None and init.agent_info.name == "threadline"


async def test_prompt_streams_chunks_that_make_the_final_text(home: Path, tmp_path: Path) -> None:
    async with acp_sidecar(home) as (conn, client):
        await asyncio.wait_for(conn.initialize(protocol_version=1), 30)
        session = await conn.new_session(cwd=str(tmp_path), threadline={"model": HELLO})
        sid = session.session_id
        result = await asyncio.wait_for(
            conn.prompt(session_id=sid, prompt=[acp.text_block("Say hello")]), 30
        )
        assert result.stop_reason == "end_turn"
        assert result.usage is not None and result.usage.output_tokens > 0
        streamed = client.chunks(sid)
        assert len(streamed) >= 3, "the answer streams in pieces, not as one message"
        assert len({c.message_id for c in streamed}) == 1 and streamed[0].message_id
        assert client.text(sid) == "Hello, Zed!"

        # The final text, as the agent stored it: session/load replays it (ACP's way).
        client.updates.clear()
        await asyncio.wait_for(conn.load_session(cwd=str(tmp_path), session_id=sid), 30)
        replayed = client.chunks(sid)
        assert "".join(c.content.text for c in replayed) == "Hello, Zed!"
        assert {c.message_id for c in replayed} == {streamed[0].message_id}


async def test_cancel_notification_ends_a_hanging_turn_with_cancelled(
    home: Path, tmp_path: Path
) -> None:
    async with acp_sidecar(home) as (conn, client):
        await asyncio.wait_for(conn.initialize(protocol_version=1), 30)
        sid = (await conn.new_session(cwd=str(tmp_path), threadline={"model": HANG})).session_id
        turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=[acp.text_block("go")]))
        await asyncio.wait_for(client.first_chunk.wait(), 30)
        await asyncio.sleep(0.2)
        assert not turn.done(), "the scripted turn hangs until cancelled"
        started = time.monotonic()
        await conn.cancel(session_id=sid)
        result = await asyncio.wait_for(turn, 10)
        assert result.stop_reason == "cancelled"
        assert time.monotonic() - started < 5
        assert client.text(sid) == "partial answer"

        # The session is usable afterwards; the partial answer was kept.
        client.updates.clear()
        await asyncio.wait_for(conn.load_session(cwd=str(tmp_path), session_id=sid), 30)
        assert client.text(sid) == "partial answer"


@pytest.mark.parametrize("option", ["reject_once", None])
async def test_refused_permission_request_through_the_sdk(
    home: Path, tmp_path: Path, option: str | None
) -> None:
    """Rejecting, or answering ``cancelled``, keeps the tool from running (the client has
    no ``tool/call`` handler: a run would fail differently) and the turn goes on."""
    async with acp_sidecar(home, RecordingClient(option)) as (conn, client):
        await asyncio.wait_for(conn.initialize(protocol_version=1), 30)
        session = await conn.new_session(
            cwd=str(tmp_path), threadline={"model": GUARDED, "tools": [GUARDED_TOOL]}
        )
        sid = session.session_id
        result = await asyncio.wait_for(
            conn.prompt(session_id=sid, prompt=[acp.text_block("ship it")]), 30
        )
        assert result.stop_reason == "end_turn"
        assert len(client.permission_requests) == 1
        req_sid, tool_call, options = client.permission_requests[0]
        deploy_id = tool_call.tool_call_id  # minted by the engine, unique for ever
        assert req_sid == sid and deploy_id.startswith("call_")
        assert {o.kind for o in options} == {
            "allow_once",
            "allow_always",
            "reject_once",
            "reject_always",
        }
        updates = [u for s, u in client.updates if s == sid]
        failed = [
            u
            for u in updates
            if isinstance(u, schema.ToolCallProgress)
            and u.tool_call_id == deploy_id
            and u.status == "failed"
        ]
        assert failed, "a refused call is reported as failed"
        assert not [u for u in updates if getattr(u, "status", None) == "in_progress"]
        assert client.text(sid) == "Not deployed."


ASKING = scripted(
    [
        {
            "tool_call": {
                "name": "ask_user",
                "arguments": {"question": "Which colour?", "choices": ["red", "green"]},
            }
        }
    ],
    [{"text": "Green it is."}],
)


class AnsweringClient(RecordingClient):
    """An ACP client whose user answers every form elicitation with ``green``."""

    def __init__(self) -> None:
        super().__init__()
        self.questions: list[tuple[str, Any]] = []

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.questions.append((message, mode))
        return schema.AcceptElicitationResponse(action="accept", content={"answer": "green"})


@pytest.mark.parametrize("advertised", [True, False])
async def test_ask_user_through_the_sdk(home: Path, tmp_path: Path, advertised: bool) -> None:
    """With ``elicitation.form`` advertised, the SDK's ``create_elicitation`` gets the
    question and its answer reaches the model; without it, the question is the turn's
    final message and the SDK client is never asked."""
    client = AnsweringClient()
    caps = schema.ClientCapabilities()
    if advertised:
        form = schema.ElicitationFormCapabilities()
        caps = schema.ClientCapabilities(elicitation=schema.ElicitationCapabilities(form=form))
    async with acp_sidecar(home, client, use_unstable_protocol=True) as (conn, _):
        await asyncio.wait_for(conn.initialize(protocol_version=1, client_capabilities=caps), 30)
        sid = (await conn.new_session(cwd=str(tmp_path), threadline={"model": ASKING})).session_id
        result = await asyncio.wait_for(
            conn.prompt(session_id=sid, prompt=[acp.text_block("Paint it.")]), 30
        )
        assert result.stop_reason == "end_turn"
        if not advertised:
            assert client.questions == []
            assert client.text(sid) == "Which colour?\n\n1. red\n2. green"
            return
        [(message, mode)] = client.questions
        assert message == "Which colour?"
        assert mode.session_id == sid and mode.tool_call_id.startswith("call_")
        assert mode.requested_schema.required == ["answer"]
        assert client.text(sid) == "Green it is."
        finished = [
            u
            for s, u in client.updates
            if isinstance(u, schema.ToolCallProgress) and u.status == "completed"
        ]
        assert [u.tool_call_id for u in finished] == [mode.tool_call_id]
        assert finished[0].raw_output == {"action": "accept", "content": {"answer": "green"}}
