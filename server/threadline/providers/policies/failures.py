"""SDK and transport exceptions turned into ``ProviderError``, one way for every provider.

Duck-typed (status codes, bodies, class names), so it never imports an SDK; messages
are scrubbed of credentials before they can reach a log, the store or a client.
Whether a failure may be retried depends on whether output has already streamed.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ...redact import redact_urls
from ..base import ProviderError, TextDelta, ThoughtDelta, ToolCallDelta, ToolCallFinal

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
