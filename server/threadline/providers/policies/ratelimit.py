"""A sliding-window request and token budget, shared by the users of one provider."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class Reservation:
    """One admitted call: when, and its tokens (an estimate until the server reports)."""

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
        self._window: deque[Reservation] = deque()

    @property
    def active(self) -> bool:
        return bool(self.requests) or bool(self.tokens)

    def _expire(self, now: float) -> None:
        while self._window and self._window[0].at <= now - self.period:
            self._window.popleft()

    def reserve(self, tokens: int) -> tuple[float, Reservation | None]:
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
        reservation = Reservation(now, tokens)
        self._window.append(reservation)
        return 0.0, reservation

    @staticmethod
    def settle(reservation: Reservation | None, tokens: int) -> None:
        """Replace the estimate with the tokens the server reported."""
        if reservation is not None:
            reservation.tokens = tokens
