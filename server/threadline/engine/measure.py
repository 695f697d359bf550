"""How the next model request of a session spends its context window, by part.

Editors draw this (the desktop's context picture, before and after a compaction), so
every figure is the provider's own count of a real compiled request, never a guess
from text length: the request as the next turn would send it, then the same request
without tools, the system message alone and the summary alone.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..providers.base import ChatRequest, Provider
from .compiler import to_chat_messages
from .host import CompactionHost
from .outcomes import ContextUse


def context_parts(session: CompactionHost, provider: Provider) -> ContextUse:
    """Needs of the session only what a compaction does: its transcript, options and
    the request compiler."""
    request = session.compile_request(
        budget=session.config.tool_budget, context_window=provider.context_window
    )
    used = provider.count_tokens(request)
    without_tools = provider.count_tokens(replace(request, tools=[], tool_choice="none"))
    # Every system message: the first, and the tool section after the history.
    system_messages = [m for m in request.messages if m.role == "system"]
    system = provider.count_tokens(ChatRequest(messages=system_messages))
    summaries = [m for m in session.transcript.working() if _is_summary(m)]
    summary = provider.count_tokens(ChatRequest(to_chat_messages(summaries))) if summaries else 0
    tools = max(0, used - without_tools)
    history = max(0, used - tools - system - summary)
    return ContextUse(used, provider.context_window, system, tools, history, summary)


def _is_summary(message: dict[str, Any]) -> bool:
    content = message["content"]
    return bool(content) and content[0].get("type") == "summary"
