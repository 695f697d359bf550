"""Credentials that must never be shown or logged: passwords in URLs.

A provider's ``base_url`` may carry ``user:password@`` (a proxy, a self-hosted server
behind basic auth). Whatever shows or logs a URL, or a message that may quote one (an
HTTP library's error), passes it through here first.
"""

from __future__ import annotations

import logging
import re

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s]*@")
"""Up to the authority's last ``@``: a password may hold a raw ``@`` too."""


def redact_urls(text: str) -> str:
    """``http://user:pw@host/…`` → ``http://***@host/…``, anywhere in ``text``."""
    return _USERINFO.sub(r"\1***@", text)


class RedactingFilter(logging.Filter):
    """Redacts URL userinfo in every record a handler writes (message and traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_urls(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_urls(record.exc_text)
        return True
