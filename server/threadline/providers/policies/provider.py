"""The provider wrapper that applies retries, rate limits and timeouts (see the package)."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing

import anyio

from ..base import ChatRequest, Provider, ProviderError, ProviderEvent, StatusNotice, Usage
from .failures import OUTPUT_EVENTS, ProviderFailure, failure_from_exception
from .ratelimit import RateLimiter
from .settings import PolicySettings

log = logging.getLogger(__name__)


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
                    elif isinstance(event, Usage):
                        RateLimiter.settle(reservation, event.total_tokens)
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
