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


_SECRET_NAME = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)")
"""Environment names that may hold a credential (``OPENAI_API_KEY``, ``GH_TOKEN``,
``AWS_SECRET_ACCESS_KEY``, ``ANTHROPIC_AUTH_TOKEN``…)."""

_PROVIDER_PREFIXES = ("OPENAI_", "ANTHROPIC_", "THREADLINE_")


def command_env(environ: dict[str, str], *, drop: frozenset[str] = frozenset()) -> dict[str, str]:
    """The environment a command the agent runs gets: this process's, without any
    variable that may hold a credential (provider keys first among them), without
    provider and Threadline settings, without ``drop`` (key variables the user's config
    names), and with pagers that never wait for a key."""
    env = {
        name: value
        for name, value in environ.items()
        if name not in drop
        and not _SECRET_NAME.search(name)
        and not name.startswith(_PROVIDER_PREFIXES)
    }
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
    return env
