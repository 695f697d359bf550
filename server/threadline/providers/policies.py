"""Policies that wrap any provider: retries, rate limits and timeouts.

``PolicyProvider(inner, settings)`` is itself a provider, so policies compose over
the OpenAI-compatible, Anthropic or any other backend without the backend knowing.

* **Retry** with exponential backoff and jitter, only for retryable failures (429,
  5xx, connection errors, stalls) that happen *before the first output event*. The
  server's ``Retry-After`` (or ``retry-after-ms``) is honoured. Once text, a thought or
  a tool call has streamed, a failure is never retried: the caller gets the
  ``ProviderError`` and keeps what streamed (the turn fails with -32011 and
  ``partialText``), because a silent retry would show the user a different answer
  glued onto the first one.
* **Rate limits**: at most N requests and/or M tokens per period (a sliding window),
  shared by every session that uses the same provider entry.
* **Timeouts**: an idle-stream timeout (no event for N seconds) and an overall
  timeout for the whole call, retries and waits included.

Every wait is announced first as a ``StatusNotice`` (the turn loop shows it as a
``session_info_update`` status), so a client never sees a silent stall.

This module also turns SDK exceptions into ``ProviderError`` (:func:`failure_from_exception`)
so both HTTP providers classify failures the same way; it never imports an SDK.
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, fields
from typing import Any

import anyio

from ..redact import redact_urls
from .base import (
    ChatRequest,
    Provider,
    ProviderError,
    ProviderEvent,
    StatusNotice,
    TextDelta,
    ThoughtDelta,
    ToolCallDelta,
    ToolCallFinal,
    UsageReport,
)

log = logging.getLogger(__name__)

OUTPUT_EVENTS = (TextDelta, ThoughtDelta, ToolCallDelta, ToolCallFinal)
"""Events that reach the user: once one has streamed, a failure is final."""

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
TRANSIENT_CODES = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "server_error", "timeout", "529"}
)


@dataclass(frozen=True, slots=True)
class ProviderFailure(ProviderError):
    """A ``ProviderError`` that also carries the server's Retry-After hint (seconds)."""

    retry_after: float | None = None


# -- settings -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """Per provider (or per model) policy knobs; ``[providers.X.policies]`` in the config."""

    retries: int = 3
    """Retries after the first attempt (0 disables retrying)."""
    retry_base: float = 1.0
    """First backoff delay in seconds; doubles on each retry."""
    retry_max: float = 30.0
    """Cap on one backoff delay."""
    jitter: float = 0.5
    """Fraction of each backoff delay that is randomized (0 = none, 1 = full jitter)."""
    max_retry_after: float = 120.0
    """A server asking to wait longer than this fails the call instead."""
    requests_per_period: int | None = None
    tokens_per_period: int | None = None
    period: float = 60.0
    """Length of the rate-limit window in seconds."""
    idle_timeout: float | None = 120.0
    """Longest silence between two stream events (the first one included)."""
    total_timeout: float | None = 900.0
    """Longest whole call, retries and waits included."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> PolicySettings:
        """Validated settings from a config table; unknown keys are an error."""
        known = {f.name: f for f in fields(cls)}
        unknown = set(data) - set(known)
        if unknown:
            raise ValueError(
                f"unknown policy keys: {', '.join(sorted(unknown))} "
                f"(known: {', '.join(sorted(known))})"
            )
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key.endswith("_timeout") and (value is False or value == 0):
                values[key] = None  # 0 or false turns a timeout off
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"policy {key} must be a number")
            if value < 0:
                raise ValueError(f"policy {key} must not be negative")
            integral = key == "retries" or key.endswith("_per_period")
            values[key] = (
                (int(value) or None)
                if key.endswith("_per_period")
                else (int(value) if integral else float(value))
            )
        settings = cls(**values)
        if settings.period <= 0:
            raise ValueError("policy period must be positive")
        return settings


# -- failures ---------------------------------------------------------------------------

_KEY_PATTERN = re.compile(r"\b(sk-(?:ant-)?[A-Za-z0-9_\-]{4})[A-Za-z0-9_\-]{8,}")


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """Mask credentials in a message before it can reach a log, the store or a client:
    the given secrets, key-shaped strings, and passwords in URLs."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return redact_urls(_KEY_PATTERN.sub(r"\1***", text))


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


def failure_from_exception(
    exc: BaseException, *, streamed: bool, secrets: Iterable[str] = ()
) -> ProviderFailure:
    """Classify an SDK or transport exception (duck-typed: no SDK import needed).

    Before output: 429/5xx/408/409 and connection errors are retryable. After output
    the same errors become ``stream_interrupted`` — retryable by the user, never
    silently by a policy.
    """
    message = scrub(_exception_message(exc), secrets)
    status = getattr(exc, "status_code", None)
    code = _error_code(exc)
    if isinstance(status, int) and status >= 400:
        response = getattr(exc, "response", None)
        retry_after = parse_retry_after(getattr(response, "headers", None))
        retryable = status in RETRYABLE_STATUS or status >= 500
        if code == "insufficient_quota":
            retryable = False
        reason = "stream_interrupted" if streamed else _status_reason(status, code)
        return ProviderFailure(reason, message, status, retryable, retry_after)
    if isinstance(status, int) or isinstance(getattr(exc, "body", None), dict):
        # An error event inside a 200 stream (Anthropic ``event: error``, an OpenAI-style
        # ``data: {"error": ...}``): transient kinds are retryable like their HTTP twins.
        retryable = code in TRANSIENT_CODES or (code or "").startswith("5") or code == "429"
        if streamed:
            reason = "stream_interrupted"
        elif code in ("overloaded_error", "529"):
            reason = "overloaded"
        else:
            reason = "server_error" if retryable else "stream_error"
        return ProviderFailure(reason, message, None, retryable)
    name = type(exc).__name__
    if isinstance(exc, TimeoutError) or "Timeout" in name:
        reason = "stream_interrupted" if streamed else "timeout"
        return ProviderFailure(reason, message or "the request timed out", None, True)
    if (
        "Connection" in name
        or "RemoteProtocol" in name
        or "ReadError" in name
        or isinstance(exc, ConnectionError | OSError)
    ):
        reason = "stream_interrupted" if streamed else "connection_error"
        return ProviderFailure(reason, message or "connection failed", None, True)
    if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
        return ProviderFailure(
            "malformed_response", f"the server sent an unreadable event: {message}", None, False
        )
    return ProviderFailure("provider_exception", f"{name}: {message}", None, False)


def _exception_message(exc: BaseException) -> str:
    text = getattr(exc, "message", None)
    if not isinstance(text, str) or not text:
        text = str(exc)
    cause = exc.__cause__
    if cause is not None and str(cause) and str(cause) not in text:
        text = f"{text} ({type(cause).__name__}: {cause})"
    return text


def _error_code(exc: BaseException) -> str | None:
    """The error's code or type (``insufficient_quota``, ``overloaded_error``, ``502``)."""
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        return code
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)  # pyright: ignore[reportUnknownMemberType]
        if isinstance(err, dict):
            value = err.get("code") or err.get("type")  # pyright: ignore[reportUnknownMemberType]
            if isinstance(value, str | int) and not isinstance(value, bool):
                return str(value)
    return None


def _status_reason(status: int, code: str | None) -> str:
    if status == 429:
        return "quota_exceeded" if code == "insufficient_quota" else "rate_limited"
    if status in (401, 403):
        return "auth_error"
    if status == 529 or code == "overloaded_error":
        return "overloaded"
    if status >= 500:
        return "server_error"
    if status == 413:
        return "context_too_large"
    return "bad_request"


# -- rate limiting ------------------------------------------------------------------------


@dataclass(slots=True)
class _Reservation:
    at: float
    tokens: int


class RateLimiter:
    """Sliding-window request and token budget, shared by the users of one provider.

    ``reserve`` is synchronous (no await), so on one event loop reservations are
    atomic: two sessions cannot both take the last slot.
    """

    def __init__(
        self,
        requests_per_period: int | None,
        tokens_per_period: int | None,
        period: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.requests = requests_per_period
        self.tokens = tokens_per_period
        self.period = period
        self.clock = clock
        self._window: deque[_Reservation] = deque()

    @property
    def active(self) -> bool:
        return bool(self.requests) or bool(self.tokens)

    def _expire(self, now: float) -> None:
        while self._window and self._window[0].at <= now - self.period:
            self._window.popleft()

    def reserve(self, tokens: int) -> tuple[float, _Reservation | None]:
        """``(0, reservation)`` if admitted now, else ``(seconds to wait, None)``."""
        now = self.clock()
        self._expire(now)
        if self.requests and len(self._window) >= self.requests:
            return self._window[0].at + self.period - now, None
        if self.tokens and self._window:
            used = sum(r.tokens for r in self._window)
            if used + tokens > self.tokens:
                # Wait until enough old reservations expire; a request larger than the
                # whole budget waits for an empty window rather than forever.
                excess = used + tokens - self.tokens
                freed = 0
                for r in self._window:
                    freed += r.tokens
                    if freed >= excess:
                        return r.at + self.period - now, None
                return self._window[-1].at + self.period - now, None
        reservation = _Reservation(now, tokens)
        self._window.append(reservation)
        return 0.0, reservation

    @staticmethod
    def settle(reservation: _Reservation | None, tokens: int) -> None:
        """Replace the estimate with the tokens the server reported."""
        if reservation is not None:
            reservation.tokens = tokens


# -- the wrapper ----------------------------------------------------------------------------


class PolicyProvider:
    """A provider that applies ``settings`` around ``inner`` (see the module docstring)."""

    def __init__(
        self,
        inner: Provider,
        settings: PolicySettings | None = None,
        *,
        limiter: RateLimiter | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.inner = inner
        self.settings = settings or PolicySettings()
        s = self.settings
        self.limiter = limiter or RateLimiter(
            s.requests_per_period, s.tokens_per_period, s.period, clock
        )
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def context_window(self) -> int:
        return self.inner.context_window

    def count_tokens(self, request: ChatRequest) -> int:
        return self.inner.count_tokens(request)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Delay before retry number ``attempt + 1``: Retry-After if given, else
        exponential with jitter."""
        s = self.settings
        if retry_after is not None:
            return retry_after + self._rng.random() * min(1.0, 0.1 * retry_after)
        delay = min(s.retry_max, s.retry_base * (2**attempt))
        return delay * (1.0 - s.jitter * self._rng.random())

    def _remaining(self, deadline: float | None) -> float | None:
        return None if deadline is None else deadline - self._clock()

    async def stream(self, request: ChatRequest) -> AsyncIterator[ProviderEvent]:
        s = self.settings
        deadline = None if s.total_timeout is None else self._clock() + s.total_timeout
        estimate = self.inner.count_tokens(request) if self.limiter.tokens else 0
        attempt = 0
        while True:
            reservation = None
            if self.limiter.active:
                while True:
                    wait, reservation = self.limiter.reserve(estimate)
                    if reservation is not None:
                        break
                    left = self._remaining(deadline)
                    if left is not None and wait > left:
                        yield ProviderError(
                            "rate_limited",
                            f"local rate limit: the next slot is {wait:.1f} s away, "
                            "past the call's overall timeout",
                            None,
                            True,
                        )
                        return
                    yield StatusNotice(
                        f"{self.model_id}: rate limit reached; waiting {wait:.1f} s", wait
                    )
                    await self._sleep(wait)
            failure: ProviderError | None = None
            streamed = False
            events = self.inner.stream(request)
            async with aclosing(events):  # type: ignore[type-var]
                while True:
                    timeout, idle = self._next_timeout(deadline)
                    try:
                        with anyio.fail_after(timeout):
                            event = await anext(events)
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        failure = self._timeout_failure(idle, timeout, streamed)
                        break
                    except Exception as exc:
                        failure = failure_from_exception(exc, streamed=streamed)
                        break
                    if isinstance(event, ProviderError):
                        failure = event
                        break
                    if isinstance(event, OUTPUT_EVENTS):
                        streamed = True
                    elif isinstance(event, UsageReport):
                        RateLimiter.settle(reservation, event.input_tokens + event.output_tokens)
                    yield event
            if failure is None:
                return
            retry_after = getattr(failure, "retry_after", None)
            if streamed or not failure.retryable or attempt >= s.retries:
                yield self._final(failure, attempt)
                return
            if retry_after is not None and retry_after > s.max_retry_after:
                yield self._final(
                    failure,
                    attempt,
                    f"; the server asked to wait {retry_after:.0f} s (more than "
                    f"max_retry_after {s.max_retry_after:.0f} s)",
                )
                return
            delay = self.backoff(attempt, retry_after)
            left = self._remaining(deadline)
            if left is not None and delay >= left:
                yield self._final(failure, attempt, "; no time left for another attempt")
                return
            attempt += 1
            what = f"HTTP {failure.status}" if failure.status else failure.reason.replace("_", " ")
            yield StatusNotice(
                f"{self.model_id}: {what}; retrying in {delay:.1f} s "
                f"(attempt {attempt + 1} of {s.retries + 1})",
                delay,
            )
            log.info(
                "%s: %s (%s); retry %d in %.2f s",
                self.model_id,
                failure.reason,
                failure.message,
                attempt,
                delay,
            )
            await self._sleep(delay)

    def _next_timeout(self, deadline: float | None) -> tuple[float | None, bool]:
        """How long to wait for the next event, and whether that is the idle limit."""
        idle = self.settings.idle_timeout
        left = self._remaining(deadline)
        if left is None or (idle is not None and idle <= left):
            return idle, idle is not None
        return max(left, 0.0), False

    def _timeout_failure(self, idle: bool, timeout: float | None, streamed: bool) -> ProviderError:
        if idle:
            where = "in the middle of the answer" if streamed else "before the first token"
            return ProviderFailure(
                "idle_timeout",
                f"the model sent nothing for {timeout or 0:g} s {where}",
                None,
                True,
            )
        total = self.settings.total_timeout or 0
        return ProviderFailure(
            "timeout",
            f"the call took longer than its overall timeout ({total:g} s)",
            None,
            not streamed,
        )

    @staticmethod
    def _final(failure: ProviderError, attempt: int, note: str = "") -> ProviderError:
        if attempt == 0 and not note:
            return failure
        tries = f" (after {attempt + 1} attempts{note})" if attempt else f" ({note.lstrip('; ')})"
        return ProviderFailure(
            failure.reason,
            failure.message + tries,
            failure.status,
            failure.retryable,
            getattr(failure, "retry_after", None),
        )
