"""The names people use for sessions and messages, beside the opaque ids.

`threadline history` labels each message with its turn (``u2`` for the second prompt,
``a2`` for the answer to it, tool calls and results included), and every client shows
those labels; a fork may be asked for at a label as well as at a message id. A fork is
titled after its parent, numbered rather than suffixed again, so forks of forks stay
readable ("notes · fork", "notes · fork 2", …) and still differ from their parent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_FORK = re.compile(r"^(?P<base>.*) · fork(?: (?P<n>\d+))?$", re.DOTALL)


def fork_title(parent_title: str) -> str:
    """``notes`` → ``notes · fork``; ``notes · fork`` → ``notes · fork 2``; and so on."""
    m = _FORK.match(parent_title)
    if m is None:
        return f"{parent_title} · fork"
    return f"{m['base']} · fork {int(m['n'] or 1) + 1}"


def turn_end(messages: Sequence[Mapping[str, Any]], ref: str) -> str | None:
    """The id of the last message of the turn labelled ``ref`` (``u2``, ``a2``), or None
    when ``ref`` is a message id or no turn has that label."""
    if not re.fullmatch(r"[ua]\d+", ref):
        return None
    for message in reversed(messages):
        if message.get("turnId") == ref:
            return str(message["messageId"])
    return None
