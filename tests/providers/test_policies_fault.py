"""Policies against a fault-injecting OpenAI-compatible server on loopback.

Every test runs the real ``openai`` SDK over a real socket; the server injects the
fault (429 with Retry-After, 500s, a cut stream, a stall, malformed SSE). Each test
shows the policy's effect and that text which already streamed is kept.
"""

from __future__ import annotations

import socket
import time

import pytest

from tests.providers.fault_server import FaultServer, Scenario, ok, status
from tests.providers.helpers import collect, errors, notices, text_of
from threadline.providers.base import ChatMessage, ChatRequest, Done, TextDelta, Usage
from threadline.providers.openai_compat import OpenAICompatProvider, OpenAIOptions
from threadline.providers.policies import PolicyProvider, PolicySettings, RateLimiter
from threadline.userconfig import Secret

KEY = "sk-test-0123456789abcdefSECRET"


def request(text: str = "Hi") -> ChatRequest:
    return ChatRequest([ChatMessage("system", "Be brief."), ChatMessage("user", text)])


def provider(
    fault: FaultServer | None, base_url: str | None = None, **policy: object
) -> PolicyProvider:
    inner = OpenAICompatProvider(
        OpenAIOptions(
            model="fault-model",
            model_id="openai:fault-model",
            base_url=base_url or (fault.base_url if fault else None),
            api_key=Secret(KEY),
        )
    )
    settings = PolicySettings.from_mapping(
        {"retry_base": 0.05, "jitter": 0.0, "idle_timeout": 10, **policy}
    )
    return PolicyProvider(inner, settings)


async def test_429_then_success_honours_retry_after(fault: FaultServer) -> None:
    fault.push(status(429, "slow down", headers={"Retry-After": "1"}), ok("Hi", " there"))
    p = provider(fault, retries=3)
    events = await collect(p, request())
    waits = notices(events)
    assert len(waits) == 1
    assert waits[0].retry_in is not None and 1.0 <= waits[0].retry_in <= 1.1
    assert "HTTP 429" in waits[0].message and "attempt 2 of 4" in waits[0].message
    assert text_of(events) == "Hi there"
    assert events[-1] == Done("stop")
    assert Usage(12, 5) in events
    first, second = fault.chat_requests()
    assert second.at - first.at >= 1.0, "the retry came before Retry-After elapsed"
    # The notice comes before anything else, so the client sees the wait as it starts.
    assert events.index(waits[0]) == 0
    await p.aclose()


async def test_500s_until_retries_run_out(fault: FaultServer) -> None:
    fault.default = status(500, "boom")
    p = provider(fault, retries=2)
    events = await collect(p, request())
    waits = notices(events)
    assert [w.retry_in for w in waits] == [pytest.approx(0.05), pytest.approx(0.1)]
    [err] = errors(events)
    assert err.status == 500 and err.retryable and err.reason == "server_error"
    assert "after 3 attempts" in err.message
    times = [r.at for r in fault.chat_requests()]
    assert len(times) == 3
    assert times[1] - times[0] >= 0.05 and times[2] - times[1] >= 0.1  # exponential
    assert text_of(events) == ""
    await p.aclose()


async def test_client_errors_are_not_retried(fault: FaultServer) -> None:
    fault.push(status(400, "bad request"))
    fault.push(
        Scenario(status=429, error={"message": "quota", "type": "x", "code": "insufficient_quota"})
    )
    p = provider(fault, retries=3)
    [err] = errors(await collect(p, request()))
    assert (err.status, err.retryable, err.reason) == (400, False, "bad_request")
    [err] = errors(await collect(p, request()))
    assert (err.status, err.retryable, err.reason) == (429, False, "quota_exceeded")
    assert len(fault.chat_requests()) == 2
    await p.aclose()


async def test_stream_dropped_midway_fails_without_retry_and_keeps_text(
    fault: FaultServer,
) -> None:
    fault.push(ok("Partial", " answer", ending="drop"), ok("A different answer"))
    p = provider(fault, retries=3)
    events = await collect(p, request())
    assert text_of(events) == "Partial answer"
    [err] = errors(events)
    assert err.reason == "stream_interrupted" and err.retryable
    assert events[-1] is err and not notices(events)
    assert len(fault.chat_requests()) == 1, "a policy retried after output had streamed"
    await p.aclose()


async def test_clean_eof_without_finish_reason_is_an_interruption(fault: FaultServer) -> None:
    fault.push(ok("Cut", " short", ending="eof"))
    events = await collect(provider(fault), request())
    assert text_of(events) == "Cut short"
    [err] = errors(events)
    assert err.reason == "stream_interrupted" and err.retryable
    assert not any(isinstance(e, Done) for e in events)


async def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = provider(None, base_url=f"http://127.0.0.1:{port}/v1", retries=2)
    events = await collect(p, request())
    assert len(notices(events)) == 2
    [err] = errors(events)
    assert err.reason == "connection_error" and err.retryable and err.status is None
    await p.aclose()


async def test_stall_midway_hits_idle_timeout_and_keeps_text(fault: FaultServer) -> None:
    fault.push(ok("Slow", " start", ending="stall", stall_seconds=20))
    p = provider(fault, idle_timeout=0.5, retries=3)
    started = time.monotonic()
    events = await collect(p, request())
    assert time.monotonic() - started < 5
    assert text_of(events) == "Slow start"
    [err] = errors(events)
    assert err.reason == "idle_timeout" and err.retryable
    assert "in the middle of the answer" in err.message
    assert len(fault.chat_requests()) == 1
    await p.aclose()


async def test_stall_before_first_token_is_retried(fault: FaultServer) -> None:
    fault.push(Scenario(first_byte_delay=20), ok("Recovered"))
    p = provider(fault, idle_timeout=0.5, retries=2)
    events = await collect(p, request())
    [wait] = notices(events)
    assert "idle timeout" in wait.message
    assert text_of(events) == "Recovered" and not errors(events)
    assert len(fault.chat_requests()) == 2
    await p.aclose()


async def test_overall_timeout_ends_a_slow_stream(fault: FaultServer) -> None:
    fault.push(ok(*[f"w{i} " for i in range(20)], chunk_delay=0.2))
    p = provider(fault, idle_timeout=5, total_timeout=1.0, retries=3)
    started = time.monotonic()
    events = await collect(p, request())
    assert time.monotonic() - started < 3
    [err] = errors(events)
    assert err.reason == "timeout" and not err.retryable
    streamed = text_of(events)
    assert streamed.startswith("w0 w1 ") and "w19" not in streamed
    await p.aclose()


async def test_malformed_sse_fails_and_keeps_text(fault: FaultServer) -> None:
    fault.push(ok("Good", " start", ending="malformed"))
    p = provider(fault, retries=3)
    events = await collect(p, request())
    assert text_of(events) == "Good start"
    [err] = errors(events)
    assert err.reason == "malformed_response" and not err.retryable
    # Malformed before any output: not transient, so not retried either.
    fault.push(Scenario(ending="malformed"))
    events = await collect(p, request())
    [err] = errors(events)
    assert err.reason == "malformed_response"
    assert len(fault.chat_requests()) == 2
    await p.aclose()


async def test_error_event_in_stream_retried_before_output_only(fault: FaultServer) -> None:
    fault.push(Scenario(ending="error_event"), ok("Fine", " now"))
    p = provider(fault, retries=2)
    events = await collect(p, request())
    [wait] = notices(events)
    assert "server error" in wait.message
    assert text_of(events) == "Fine now" and not errors(events)
    fault.push(ok("Half", " way", ending="error_event"))
    events = await collect(p, request())
    assert text_of(events) == "Half way"
    [err] = errors(events)
    assert err.reason == "stream_interrupted" and err.retryable
    assert "upstream overloaded" in err.message
    assert len(fault.chat_requests()) == 3
    await p.aclose()


async def test_request_rate_limit_waits_and_announces(fault: FaultServer) -> None:
    p = provider(fault, requests_per_period=2, period=1.0)
    started = time.monotonic()
    first = await collect(p, request())
    second = await collect(p, request())
    assert not notices(first) and not notices(second)
    third = await collect(p, request())
    [wait] = notices(third)
    assert "rate limit" in wait.message and wait.retry_in is not None and wait.retry_in <= 1.0
    assert time.monotonic() - started >= 1.0
    assert text_of(third) == "Hello from the fault server."
    await p.aclose()


async def test_rate_limit_is_shared_between_providers(fault: FaultServer) -> None:
    limiter = RateLimiter(1, None, 0.6)
    a = provider(fault)
    b = provider(fault)
    a.limiter = b.limiter = limiter
    started = time.monotonic()
    await collect(a, request())
    events = await collect(b, request())
    assert len(notices(events)) == 1
    assert fault.chat_requests()[1].at - started >= 0.6
    await a.aclose()
    await b.aclose()


async def test_token_rate_limit_uses_reported_usage(fault: FaultServer) -> None:
    # Each answer reports 17 tokens; a budget of 20 a second admits one call a second.
    p = provider(fault, tokens_per_period=20, period=1.0)
    started = time.monotonic()
    first = await collect(p, request())
    assert Usage(12, 5) in first
    second = await collect(p, request())
    [wait] = notices(second)
    assert wait.retry_in is not None and 0.5 < wait.retry_in <= 1.0
    assert fault.chat_requests()[1].at - started >= 1.0
    await p.aclose()


async def test_secrets_are_sent_but_never_reported(fault: FaultServer) -> None:
    fault.push(status(401, f"Incorrect API key provided: {KEY}"))
    p = provider(fault)
    events = await collect(p, request())
    [err] = errors(events)
    assert err.reason == "auth_error" and not err.retryable
    assert KEY not in err.message and "***" in err.message
    assert fault.chat_requests()[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(p.inner.options)  # type: ignore[attr-defined]
    await p.aclose()


async def test_partial_text_survives_as_events_before_the_error(fault: FaultServer) -> None:
    """What the turn loop keeps: every TextDelta before the ProviderError, in order."""
    fault.push(ok("one ", "two ", "three", ending="drop"))
    events = await collect(provider(fault), request())
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["TextDelta", "TextDelta", "TextDelta", "ProviderFailure"]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["one ", "two ", "three"]
