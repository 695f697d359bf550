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

One module per job: :mod:`.settings` (the knobs), :mod:`.failures` (SDK exceptions
turned into ``ProviderError`` the same way for every HTTP provider, without importing
an SDK), :mod:`.ratelimit` (the sliding window) and :mod:`.provider` (the wrapper).
"""

from __future__ import annotations

from .provider import PolicyProvider
from .ratelimit import RateLimiter
from .settings import PolicySettings

__all__ = ["PolicyProvider", "PolicySettings", "RateLimiter"]
