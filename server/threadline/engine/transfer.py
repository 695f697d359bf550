"""Sessions out of and into a store: Markdown for people, the event log for machines.

- **Markdown** is the transcript as a person reads it: each prompt and answer, tool
  calls folded into ``<details>`` with their result, compaction summaries as quotes.
- **JSON lines** is the event log: a header line (``"threadline": "session-log"``, the
  session's title, cwd, config, tags and where it was forked from), then one line per
  event of its logical log, ``{"seq", "kind", "payload"}``. A fork's log holds its
  parent's prefix (forks are resolved), so the file stands alone.

Import reads such a file into a **new** session: every line is checked in order
(JSON, the header, consecutive ``seq``, a known kind, a payload the engine can apply,
messages the protocol accepts, ids unique in the file) and the first bad one is named
(-32602, ``data.line``); only a file that passes whole is written, in one store
transaction. Message and tool-call ids are minted anew, and every reference to them in
the log follows, so ids stay unique however often a file is imported.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from threadline_protocol.messages import Message

from ..store.base import NewEvent, SessionRow, StoredEvent
from .errors import InvalidParams
from .ids import new_id, now_iso
from .images import BlobReader, describe, inline
from .mutations import ContextReplace, ContextSummary, MessageMutation, Msg, from_event

HEADER = "session-log"
VERSION = 1


def export_jsonl(row: SessionRow, log: Sequence[StoredEvent], read: BlobReader) -> str:
    """``read``: the store's blobs, whose bytes the file carries (inline, as base64
    ``data``), so it stands alone; an import stores them as blobs again."""
    header = {
        "threadline": HEADER,
        "version": VERSION,
        "sessionId": row.id,
        "title": row.title,
        "cwd": row.cwd,
        "config": row.config,
        "tags": list(row.tags),
        "parentSessionId": row.parent_id,
        "forkedAtMessageId": row.forked_at_message_id,
        "createdAt": row.created_at,
        "updatedAt": row.updated_at,
    }
    lines = [json.dumps(header, ensure_ascii=False)]
    for seq, ev in enumerate(log, start=1):
        lines.append(
            json.dumps(
                {"seq": seq, "kind": ev.kind, "payload": inline(ev.payload, read)},
                ensure_ascii=False,
            )
        )
    return "\n".join(lines) + "\n"


def export_markdown(row: SessionRow, history: Sequence[Msg]) -> str:
    out = [f"# {row.title or 'Session ' + row.id}", ""]
    out.append(f"*Session `{row.id}` · {row.cwd} · {row.config.get('model') or ''}*")
    results = {
        b.get("toolUseId"): b
        for m in history
        if m.get("role") == "tool"
        for b in m.get("content") or ()
        if b.get("type") == "tool_result"
    }
    for m in history:
        role = m.get("role")
        if role == "tool":
            continue  # shown folded under the call that asked for it
        parts = [_block_markdown(b, results) for b in m.get("content") or ()]
        body = "\n\n".join(p for p in parts if p)
        if not body:
            continue
        heading = "## You" if role == "user" else "## Assistant"
        if m.get("truncated"):
            heading += " (cut off)"
        out += ["", heading, "", body]
    return "\n".join(out) + "\n"


def _text_of(blocks: Any) -> str:
    return "\n".join(str(b.get("text", "")) for b in blocks or () if b.get("type") == "text")


def _block_markdown(block: dict[str, Any], results: dict[Any, dict[str, Any]]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "image":
        return f"*[image: {describe(block)}]*"
    if kind == "summary":
        return "\n".join("> " + line for line in str(block.get("text", "")).splitlines())
    if kind == "tool_use":
        title = block.get("title") or block.get("name")
        args = json.dumps(block.get("input"), ensure_ascii=False, indent=2)
        result = results.get(block.get("id"))
        answer = _text_of(result.get("content")) if result else "(no result)"
        return (
            f"<details><summary>Tool: {title}</summary>\n\n```json\n{args}\n```\n\n"
            f"```\n{answer}\n```\n\n</details>"
        )
    return ""


# -- import ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImportedLog:
    session_id: str
    title: str | None
    cwd: str
    config: dict[str, Any]
    tags: list[str]
    events: list[NewEvent]
    now: str


def _bad(line: int, why: str) -> InvalidParams:
    return InvalidParams(f"line {line}: {why}; nothing was imported", {"line": line})


def read_log(content: str) -> ImportedLog:
    """Check an exported event log line by line; the first bad line is named."""
    lines = content.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise _bad(1, "the file is empty")
    header = _object(lines[0], 1)
    if header.get("threadline") != HEADER or header.get("version") != VERSION:
        raise _bad(1, f'not a Threadline session log (want "threadline": "{HEADER}", version 1)')
    cwd, config = header.get("cwd"), header.get("config")
    if not isinstance(cwd, str) or not isinstance(config, dict):
        raise _bad(1, "the header needs a cwd (text) and a config (object)")
    title = header.get("title")
    tags = header.get("tags") or []
    if not (title is None or isinstance(title, str)) or not isinstance(tags, list):
        raise _bad(1, "title must be text or null and tags a list")
    raw: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    for n, text in enumerate(lines[1:], start=2):
        ev = _object(text, n)
        if ev.get("seq") != n - 1:
            raise _bad(n, f"seq must be {n - 1} (events in order, none missing)")
        kind, payload = ev.get("kind"), ev.get("payload")
        if not isinstance(kind, str) or not isinstance(payload, dict):
            raise _bad(n, "an event needs a kind (text) and a payload (object)")
        _check_event(n, kind, payload, seen)
        raw.append((kind, payload))
    return ImportedLog(
        session_id=new_id("sess"),
        title=title,
        cwd=cwd,
        config=config,
        tags=[str(t) for t in tags],
        events=_renamed(raw),
        now=now_iso(),
    )


def _object(text: str, line: int) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(line, f"not JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(value, dict):
        raise _bad(line, "not a JSON object")
    return value


def _check_event(line: int, kind: str, payload: dict[str, Any], seen: set[str]) -> None:
    try:
        mutation = from_event(kind, payload)
    except ValueError as exc:
        raise _bad(line, str(exc)) from exc
    except (KeyError, TypeError) as exc:
        raise _bad(line, f"the payload of a {kind} event lacks {exc}") from exc
    if isinstance(mutation, ContextReplace):
        messages: list[Any] = list(mutation.messages)
    elif isinstance(mutation, MessageMutation | ContextSummary):
        messages = [mutation.message]
    else:
        messages = []
    for m in messages:
        try:
            Message.model_validate(m)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise _bad(line, f"invalid message ({where}: {first['msg']})") from exc
        mid = m["messageId"]
        if mid in seen:
            raise _bad(line, f"message id {mid} appears twice")
        seen.add(mid)
    if isinstance(mutation, ContextSummary) and mutation.up_to_message_id not in seen:
        raise _bad(
            line, f"the summary covers a message not before it ({mutation.up_to_message_id})"
        )


def _renamed(raw: list[tuple[str, dict[str, Any]]]) -> list[NewEvent]:
    """The events with new message and tool-call ids, every reference following."""
    fresh: dict[str, str] = {}
    for _, payload in raw:
        for m in _messages(payload):
            fresh[m["messageId"]] = new_id("msg")
            for b in m.get("content") or ():
                if isinstance(b, dict) and b.get("type") in ("tool_use", "exit_signal"):
                    old = b.get("id")
                    if isinstance(old, str) and old not in fresh:
                        fresh[old] = new_id("call")
    out: list[NewEvent] = []
    for kind, payload in raw:
        mutation = from_event(kind, _swap(payload, fresh))
        if isinstance(mutation, MessageMutation):  # images carried inline become blobs
            mutation = type(mutation).holding(mutation.message)
        out.append(mutation.to_event())
    return out


def _messages(payload: dict[str, Any]) -> list[dict[str, Any]]:
    if isinstance(payload.get("messages"), list):
        return [m for m in payload["messages"] if isinstance(m, dict)]
    return [payload["message"]] if isinstance(payload.get("message"), dict) else []


def _swap(value: Any, fresh: dict[str, str]) -> Any:
    if isinstance(value, str):
        return fresh.get(value, value)
    if isinstance(value, list):
        return [_swap(v, fresh) for v in value]
    if isinstance(value, dict):
        return {k: _swap(v, fresh) for k, v in value.items()}
    return value
