"""``threadline ask``: one prompt, streamed to the terminal; Ctrl-C interrupts the turn."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from typing import Any, TextIO

from .client import RpcError, ThreadlineClient


def _quiet_server_env() -> dict[str, str]:
    return {"THREADLINE_LOG_LEVEL": os.environ.get("THREADLINE_LOG_LEVEL", "WARNING")}


async def ask(
    prompt: str,
    *,
    model: str | None = None,
    session_id: str | None = None,
    tools: bool = False,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    client = await ThreadlineClient.spawn(env=_quiet_server_env())
    interrupted = False
    try:
        await client.initialize()
        if session_id is None:
            # A one-shot question needs no workspace tools unless asked for.
            opts: dict[str, Any] = {"builtinTools": tools}
            if model:
                opts["model"] = model
            session_id = await client.new_session(**opts)
        else:
            await client.request("session/resume", {"sessionId": session_id, "cwd": os.getcwd()})
            if model:
                await client.request(
                    "session/set_config_option",
                    {"sessionId": session_id, "configId": "model", "value": model},
                )
        sid = session_id

        def on_update(update_sid: str, update: dict[str, Any]) -> None:
            if update_sid != sid:
                return
            if update.get("sessionUpdate") == "agent_message_chunk":
                out.write(update.get("content", {}).get("text", ""))
                out.flush()
            elif update.get("sessionUpdate") == "tool_call":
                err.write(f"\n[tool] {update.get('title')}\n")

        client.on_update(on_update)
        loop = asyncio.get_running_loop()

        def on_sigint() -> None:
            nonlocal interrupted
            if interrupted:  # second Ctrl-C: leave now
                client.process.kill()
                return
            interrupted = True
            pending.add(loop.create_task(client.interrupt(sid)))

        pending: set[asyncio.Task[Any]] = set()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, on_sigint)
        try:
            result = await client.prompt(sid, prompt)
        except RpcError as exc:
            # The session and the prompt are stored: say which, so it can be retried.
            out.write("\n")
            err.write(f"threadline: {exc.message}\n")
            err.write(f"session: {sid} (continue it with --session {sid})\n")
            return 1
        out.write("\n")
        out.flush()
        stop = result.get("stopReason")
        if stop == "cancelled":
            err.write("[interrupted]\n")
        elif stop != "end_turn":
            err.write(f"[stopped: {stop}]\n")
        err.write(f"session: {sid}\n")
        return 130 if interrupted else 0
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
        await client.close()


async def sessions(out: TextIO = sys.stdout) -> int:
    client = await ThreadlineClient.spawn(env=_quiet_server_env())
    try:
        await client.initialize()
        for s in await client.list_sessions():
            meta = s.get("_meta") or {}
            out.write(
                f"{s['sessionId']}  {s.get('updatedAt', '')}  "
                f"{meta.get('messageCount', 0):>4} msgs  {s.get('title') or ''}\n"
            )
        return 0
    finally:
        await client.close()


async def history(session_id: str, out: TextIO = sys.stdout) -> int:
    client = await ThreadlineClient.spawn(env=_quiet_server_env())
    try:
        await client.initialize()
        for m in await client.history(session_id):
            for line in history_lines(m):
                out.write(line + "\n")
        return 0
    finally:
        await client.close()


async def _call(method: str, params: dict[str, Any]) -> Any:
    """One request to a sidecar started for it."""
    client = await ThreadlineClient.spawn(env=_quiet_server_env())
    try:
        await client.initialize()
        return await client.request(method, params)
    finally:
        await client.close()


async def export(session_id: str, fmt: str, out: TextIO = sys.stdout) -> int:
    """``threadline export``: Markdown to read, or the event log to import elsewhere."""
    result = await _call("session/export", {"sessionId": session_id, "format": fmt})
    out.write(result["content"])
    return 0


async def import_log(content: str, out: TextIO = sys.stdout) -> int:
    """``threadline import``: a new session from a ``--format jsonl`` export's text."""
    result = await _call("session/import", {"content": content})
    out.write(f"{result['sessionId']}  ({result['messages']} messages)\n")
    return 0


async def search(query: str, out: TextIO = sys.stdout) -> int:
    """``threadline search``: one line per hit, the matched words in [brackets]."""
    result = await _call("session/search", {"query": query})
    for h in result["hits"]:
        snippet = "".join(f"[{s['text']}]" if s["match"] else s["text"] for s in h["snippet"])
        out.write(f"{h['sessionId']}  {h.get('title') or ''}  {h['role']}: {_one_line(snippet)}\n")
    return 0


def _one_line(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


INTERRUPTED = "cancelled by the user"
"""The error the engine stores on an answer an interrupt cut off: not a failure."""


def history_lines(m: dict[str, Any]) -> list[str]:
    """One stored message as transcript lines: its text, each tool call with its
    arguments, each tool result with its tool and outcome, a compaction summary
    marked as one."""
    interrupted = m.get("truncated") and m.get("error") == INTERRUPTED
    flags = " (interrupted)" if interrupted else " (truncated)" if m.get("truncated") else ""
    head = f"[{m['turnId']} {m['role']}{flags}]"
    lines: list[str] = []
    text = "".join(b.get("text", "") for b in m["content"] if b.get("type") == "text")
    summary = "".join(b.get("text", "") for b in m["content"] if b.get("type") == "summary")
    if summary:
        lines.append(f"[{m['turnId']} compaction summary] {summary}")
    calls = any(b.get("type") == "tool_use" for b in m["content"])
    if text or (not summary and not calls and m["role"] != "tool"):
        lines.append(f"{head} {text}")
    for b in m["content"]:
        kind = b.get("type")
        if kind == "tool_use":
            lines.append(f"[{m['turnId']} tool call] {b.get('name')} {_one_line(b.get('input'))}")
        elif kind == "tool_result":
            result = "".join(
                c.get("text", "") for c in b.get("content") or [] if c.get("type") == "text"
            )
            status = b.get("status") or ("failed" if b.get("isError") else "completed")
            lines.append(
                f"[{m['turnId']} tool result] {b.get('toolName')} {status}: {_one_line(result)}"
            )
    if m.get("error") and m.get("truncated") and not interrupted:
        lines.append(f"[{m['turnId']} error] {m['error']}")
    return lines
