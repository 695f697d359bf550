"""Sessions of a given size written straight into a Threadline data folder.

Filling a 100,000-message session through the RPC would take minutes of scripted
turns; the bench writes the same events the engine writes (its own mutation types,
through its own ``EventStore``) before the server starts, then measures the server
reading them. Messages alternate user / assistant, with realistic sizes (a one-line
question, a paragraph of answer with usage and stop reason).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from threadline.engine.config import SessionConfig
from threadline.engine.ids import new_id, now_iso
from threadline.engine.mutations import AssistantMessage, ContextSummary, UserMessage
from threadline.settings import Settings
from threadline.store.factory import open_store

QUESTION = "How do I make this function handle an empty list without raising? "
ANSWER = (
    "Check for the empty case first and return early; the rest of the loop can then "
    "assume at least one element. A guard clause keeps the happy path unindented. "
)
BATCH = 1000
TABLES = ("sessions", "events", "messages", "inflight", "chunks")


def db_path(home: Path) -> Path:
    return Settings(home=home, default_model=None, log_level="WARNING").db_path


def _message(i: int) -> UserMessage | AssistantMessage:
    turn = i // 2 + 1
    now = now_iso()
    if i % 2 == 0:
        return UserMessage(
            {
                "messageId": new_id("msg"),
                "turnId": f"u{turn}",
                "role": "user",
                "content": [{"type": "text", "text": f"{QUESTION}({i})"}],
                "createdAt": now,
            }
        )
    return AssistantMessage(
        {
            "messageId": new_id("msg"),
            "turnId": f"a{turn}",
            "role": "assistant",
            "content": [{"type": "text", "text": f"{ANSWER}({i})"}],
            "createdAt": now,
            "model": "scripted:echo",
            "usage": {
                "inputTokens": 40,
                "outputTokens": 38,
                "cachedReadTokens": 0,
                "cachedWriteTokens": 0,
                "totalTokens": 78,
            },
            "stopReason": "end_turn",
        }
    )


SUMMARY = (
    "The user has been hardening a parser over many turns: empty inputs are guarded, "
    "errors carry positions, and the remaining work is the list handling in the loop."
)


def _summary(i: int, up_to: str) -> ContextSummary:
    """What a compaction commits: a summary standing for every message up to ``up_to``."""
    message = {
        "messageId": new_id("msg"),
        "turnId": f"a{i // 2}",
        "role": "assistant",
        "content": [{"type": "summary", "text": SUMMARY}],
        "createdAt": now_iso(),
    }
    return ContextSummary(message, up_to)


def fill(
    home: Path, sizes: list[int], store_url: str | None = None, *, compacted: int | None = None
) -> list[str]:
    """One session per size (in order); returns their ids. ``store_url``: a PostgreSQL
    database instead of the home's SQLite file. ``compacted``: each session ends
    with a compaction that leaves that many of its latest messages in the working
    set (a session that grew past its model's window has one)."""
    store = open_store(db_path(home), store_url)
    config = SessionConfig(model="scripted:echo").to_json()
    ids: list[str] = []
    try:
        for n in sizes:
            sid = new_id("sess")
            store.create_session(sid, "/tmp", config, now_iso(), title=f"{n} messages")
            up_to = n - 1 - (compacted or 0)
            summary: ContextSummary | None = None
            for start in range(0, n, BATCH):
                messages = [_message(i) for i in range(start, min(n, start + BATCH))]
                if compacted is not None and start <= up_to < start + len(messages):
                    summary = _summary(n, messages[up_to - start].message["messageId"])
                store.append(sid, [m.to_event() for m in messages], now_iso())
            if summary is not None:
                store.append(sid, [summary.to_event()], now_iso())
            ids.append(sid)
    finally:
        store.close()
    return ids


def row_count(home: Path) -> int:
    """Rows in every table of the store, read through a separate read-only connection."""
    uri = f"file:{db_path(home)}?mode=ro"
    with sqlite3.connect(uri, uri=True) as db:
        return sum(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES)
