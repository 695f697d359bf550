"""Through the real sidecar: an ``openai:`` model pointed at the fault server.

A 503 is retried (the client sees the wait as a ``session_info_update`` status); then
the stream is cut midway, so the turn fails with -32011 carrying ``partialText``; the
partial answer is in the history as truncated; the next prompt in the same session
works; the API key reached the server but no file, log or notification.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.providers.fault_server import FaultServer, ok, status
from tests.support import start_sidecar

KEY = "sk-test-sidecar-0123456789SECRET"


@pytest.mark.timeout(120)
async def test_cut_stream_fails_turn_with_partial_text_and_session_stays_usable(
    fault: FaultServer, isolated_config: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_config.write_text(
        f'[providers.openai]\nbase_url = "{fault.base_url}"\n\n'
        "[providers.openai.policies]\nretries = 2\nretry_base = 0.05\nidle_timeout = 10\n"
    )
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    fault.push(status(503, "warming up"), ok("Partial", " answer", ending="drop"))
    fault.default = ok("Second", " try", " works.")

    client = await start_sidecar(home)
    try:
        sid = await client.new_session(model="openai:fault-model")
        with pytest.raises(JsonRpcException) as err:
            await client.prompt(sid, "Tell me something")
        assert err.value.code == -32011
        data = err.value.data
        assert data["partialText"] == "Partial answer"
        assert data["retryable"] is True and data["reason"] == "stream_interrupted"

        # Waits are the session_info_updates with a status (others carry the state).
        infos = [
            u["update"].get("_meta", {}).get("threadline", {})
            for u in client.updates
            if u["update"]["sessionUpdate"] == "session_info_update"
        ]
        statuses = [i["status"] for i in infos if "status" in i]
        assert any("HTTP 503" in s and "retrying" in s for s in statuses), statuses
        assert client.text_of(sid) == "Partial answer"

        history = (await client.call("session/history", {"sessionId": sid}))["messages"]
        last = history[-1]
        assert last["role"] == "assistant" and last["truncated"] is True
        assert last["content"] == [{"type": "text", "text": "Partial answer"}]

        result = await client.prompt(sid, "Try again")
        assert result["stopReason"] == "end_turn"
        history = (await client.call("session/history", {"sessionId": sid}))["messages"]
        assert history[-1]["content"] == [{"type": "text", "text": "Second try works."}]
        stderr = bytes(client.stderr)
        updates = repr(client.updates)
    finally:
        await client.stop()

    requests = fault.chat_requests()
    assert len(requests) == 3  # 503, the cut stream, the second prompt: no silent retry
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in requests)
    assert requests[0].body["model"] == "fault-model"
    assert requests[0].body["stream_options"] == {"include_usage": True}
    assert KEY not in updates and KEY.encode() not in stderr
    for path in home.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"the API key leaked into {path}"
