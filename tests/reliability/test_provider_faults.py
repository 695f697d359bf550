"""Provider faults at random stream offsets: nothing streamed is lost, the session lives.

A real ``openai:`` provider talks to the fault-injecting loopback server of the
providers suite (``tests/providers/fault_server.py``: real HTTP, chunked SSE, real
cuts and silences). Every fault class of the providers issue is played after a random
number of text chunks (0-14) with random pauses: a stream dropped midway, a body that
ends without a finish reason, a stall past the idle timeout, malformed SSE, an
in-stream error event, and HTTP 429/5xx/4xx answers (with retries) before any output;
plus a server that refuses connections, and the scripted provider's ``error`` step.

The contract for each case: when text had streamed, the turn fails with -32011 and
``data.partialText`` is exactly what the client was shown, which is exactly the
truncated answer stored, and the provider was not asked again (no silent retry after
output); when nothing had streamed, the turn either succeeds on a retry (showing only
the retry's text) or fails with an empty ``partialText``; the transcript stays valid,
and the next prompt in the same session works.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.providers.fault_server import FaultServer, Scenario, ok, status
from tests.reliability.figures import record
from tests.reliability.invariants import structural_problems, text_of
from tests.support import SidecarClient, scripted, start_sidecar

KEY = "sk-test-reliability-0123456789abcdef"
CASES = 36
WORDS = ["alpha ", "beta ", "gamma ", "δέλτα ", "ε ", "zeta\n", "eta, ", "θ "]
MID_STREAM = ["drop", "eof", "stall", "malformed", "error_event"]
BEFORE_OUTPUT = ["429", "500", "503", "400", "401"]


@pytest.fixture
def fault() -> Iterator[FaultServer]:
    server = FaultServer(default=ok("recovered"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: FaultServer) -> Path:
    """Retries on (fast), a short idle timeout, and a provider whose port is closed."""
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "THREADLINE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    path = tmp_path / "threadline.toml"
    path.write_text(
        f'[providers.openai]\nbase_url = "{fault.base_url}"\n\n'
        "[providers.openai.policies]\nretries = 2\nretry_base = 0.01\njitter = 0\n"
        "idle_timeout = 0.4\ntotal_timeout = 20\n\n"
        '[providers.closed]\ntype = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "OPENAI_API_KEY"\n\n'
        "[providers.closed.policies]\nretries = 1\nretry_base = 0.01\n"
    )
    monkeypatch.setenv("THREADLINE_CONFIG", str(path))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return path


def fault_case(rng: random.Random, kind: str) -> tuple[list[str], list[Scenario]]:
    """The chunks sent before the fault, and the scenarios to queue."""
    if kind in BEFORE_OUTPUT:
        code = int(kind)
        headers = {"Retry-After": "0.05"} if code == 429 else {}
        retryable = code in (429, 500, 503)
        # A retryable failure is retried: sometimes it clears, sometimes it outlasts them.
        failures = rng.choice([1, 3]) if retryable else 1
        return [], [status(code, headers=headers)] * failures + [ok("recovered")]
    chunks = [rng.choice(WORDS) for _ in range(rng.randint(0, 14))]
    scenario = Scenario(
        chunks=chunks,
        ending=kind,
        chunk_delay=rng.choice([0.0, 0.002, 0.01]),
        stall_seconds=2.0,
    )
    return chunks, [scenario, ok("recovered")]


def seen_text(client: SidecarClient, sid: str, since: int) -> dict[str, str]:
    """Streamed text per message id in the updates received after index ``since``."""
    out: dict[str, str] = {}
    for u in client.updates[since:]:
        update = u["update"]
        if u["sessionId"] == sid and update["sessionUpdate"] == "agent_message_chunk":
            out[update["messageId"]] = out.get(update["messageId"], "") + update["content"]["text"]
    return out


async def prompt_outcome(client: SidecarClient, sid: str, text: str) -> tuple[Any, Any]:
    try:
        return await client.prompt(sid, text, timeout=30), None
    except JsonRpcException as exc:
        return None, exc


async def assert_usable(client: SidecarClient, sid: str, fault: FaultServer, n: int) -> None:
    fault.scenarios.clear()
    fault.push(ok(f"fine {n}"))
    since = len(client.updates)
    result = await client.prompt(sid, f"still there {n}?", timeout=30)
    assert result["stopReason"] == "end_turn"
    assert list(seen_text(client, sid, since).values()) == [f"fine {n}"]


@pytest.mark.timeout(180)
async def test_faults_at_random_stream_offsets_lose_no_partial_output(
    config: Path, fault: FaultServer, home: Path
) -> None:
    seed = int(time.time())
    rng = random.Random(seed)
    kinds = [*MID_STREAM, *BEFORE_OUTPUT]
    plan = [kinds[i % len(kinds)] for i in range(CASES)]
    rng.shuffle(plan)
    client = await start_sidecar(home)
    outcomes: dict[str, int] = {}
    started = time.monotonic()
    try:
        sid = await client.new_session(model="openai:fault-model", builtinTools=False)
        for n, kind in enumerate(plan):
            chunks, scenarios = fault_case(rng, kind)
            fault.scenarios.clear()
            fault.push(*scenarios)
            asked_before = len(fault.chat_requests())
            since = len(client.updates)
            result, error = await prompt_outcome(client, sid, f"case {n}: {kind}")
            seen = seen_text(client, sid, since)
            asked = len(fault.chat_requests()) - asked_before
            history = (await client.call("session/history", {"sessionId": sid}))["messages"]
            last = history[-1]
            where = f"seed {seed} case {n} ({kind}, {len(chunks)} chunks)"
            assert structural_problems(history) == [], where
            if error is not None:
                assert error.code == -32011, f"{where}: {error}"
                partial = error.data["partialText"]
                assert partial == "".join(chunks), f"{where}: partialText {partial!r}"
                assert "".join(seen.values()) == partial, f"{where}: client saw {seen}"
                if partial:
                    assert last["role"] == "assistant" and last.get("truncated") is True, (
                        f"{where}: stored {last!r}"
                    )
                    assert text_of(last) == partial, f"{where}: stored {text_of(last)!r}"
                else:  # nothing came back: no empty reply is stored
                    assert last["role"] == "user", f"{where}: stored {last!r}"
                outcomes[f"{kind}: -32011"] = outcomes.get(f"{kind}: -32011", 0) + 1
            else:
                assert chunks == [], f"{where}: streamed text then succeeded (silent retry)"
                assert result["stopReason"] == "end_turn", where
                assert list(seen.values()) == ["recovered"], f"{where}: client saw {seen}"
                assert text_of(last) == "recovered" and not last.get("truncated"), where
                outcomes[f"{kind}: retried"] = outcomes.get(f"{kind}: retried", 0) + 1
            if chunks:
                assert asked == 1, f"{where}: the provider was asked {asked} times"
            await assert_usable(client, sid, fault, n)

        closed = await client.new_session(model="closed:fault-model", builtinTools=False)
        result, error = await prompt_outcome(client, closed, "anyone there?")
        assert error is not None and error.code == -32011 and error.data["partialText"] == ""
        assert error.data["retryable"] is True
        history = (await client.call("session/history", {"sessionId": closed}))["messages"]
        assert structural_problems(history) == []
    finally:
        await client.stop()
    record(
        "provider_faults",
        seed=seed,
        cases=len(plan) + 1,
        outcomes=dict(sorted(outcomes.items())),
        seconds=round(time.monotonic() - started, 1),
    )


async def test_scripted_provider_errors_at_random_offsets(sidecar: SidecarClient) -> None:
    """The same contract through the engine alone (no HTTP): an ``error`` step after
    a random number of deltas, thoughts included."""
    rng = random.Random()
    for n in range(12):
        words = [rng.choice(WORDS) for _ in range(rng.randint(0, 30))]
        steps: list[dict[str, Any]] = [{"thought": "hmm "}] if n % 3 == 0 else []
        steps += [{"text": w} for w in words]
        steps.append({"error": {"reason": "overloaded", "message": "boom", "retryable": True}})
        sid = await sidecar.new_session(model=scripted(steps), builtinTools=False)
        since = len(sidecar.updates)
        with pytest.raises(JsonRpcException) as info:
            await sidecar.prompt(sid, "go")
        assert info.value.code == -32011
        assert info.value.data["partialText"] == "".join(words)
        assert "".join(seen_text(sidecar, sid, since).values()) == "".join(words)
        history = (await sidecar.call("session/history", {"sessionId": sid}))["messages"]
        if words or n % 3 == 0:
            last = history[-1]
            assert last.get("truncated") is True and text_of(last) == "".join(words)
        else:  # nothing came back before the error: no empty reply is stored
            assert history[-1]["role"] == "user"
        assert structural_problems(history) == []
        await sidecar.call(
            "session/set_config_option",
            {"sessionId": sid, "configId": "model", "value": scripted([{"text": "ok"}])},
        )
        assert (await sidecar.prompt(sid, "again"))["stopReason"] == "end_turn"
