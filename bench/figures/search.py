"""``session/search`` over 10,000 sessions × 100 messages, on SQLite and PostgreSQL.

The sessions are written straight through the store (``import_session_log``: the same
events and the same index writes an append makes) before the sidecar starts. Their
text is drawn from a vocabulary of 5,000 made-up words with a Zipf-like frequency, so
a query word is found in hundreds to a few thousand messages, as a real one is. Each
query is timed from the request sent to the answer read (20 hits, snippets made).

The same-run peer is the search an index saves: the same words looked for with
``LIKE '%word%'`` over the same ``texts`` table of the same store (every message read),
timed in the store directly, and so is the indexed search beside it for the ratio.
"""

from __future__ import annotations

import itertools
import random
import sqlite3
import time
from pathlib import Path

from tests.pgserver import PgServer
from threadline.engine.ids import new_id, now_iso
from threadline.engine.mutations import AssistantMessage, Mutation, UserMessage
from threadline.store.base import SessionStore
from threadline.store.factory import open_store
from threadline.store.search import query_terms

from ..context import Context
from ..fixtures import db_path
from ..report import Row, verdict
from ..servers import THREADLINE, spawn
from ..stats import ms, ms_spread, ratio, summarize
from ..wire import Connection

FIGURE = "session/search"
TARGET_MS = 50.0
SYLLABLES = ("ka", "lo", "mi", "ne", "su", "ra", "to", "vi", "pe", "zu", "do", "fe", "gi", "ho")
WORDS_PER_MESSAGE = 24
QUERIES = 12


def _vocabulary(rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < 5000:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def _text(rng: random.Random, vocab: list[str], cum: list[float]) -> str:
    return " ".join(rng.choices(vocab, cum_weights=cum, k=WORDS_PER_MESSAGE)) + "."


def _session(rng: random.Random, vocab: list[str], cum: list[float], n: int) -> list[Mutation]:
    out: list[Mutation] = []
    for i in range(n):
        msg = {
            "messageId": new_id("msg"),
            "turnId": f"{'u' if i % 2 == 0 else 'a'}{i // 2 + 1}",
            "role": "user" if i % 2 == 0 else "assistant",
            "content": [{"type": "text", "text": _text(rng, vocab, cum)}],
            "createdAt": now_iso(),
        }
        out.append(UserMessage(msg) if i % 2 == 0 else AssistantMessage(msg))
    return out


def _fill(store: SessionStore, sessions: int, per: int, ctx: Context, label: str) -> list[str]:
    """Writes the sessions; returns the query words (mid-frequency vocabulary)."""
    rng = random.Random(7)
    vocab = _vocabulary(rng)
    cum = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(vocab))))
    t0 = time.monotonic()
    for s in range(sessions):
        events = [m.to_event() for m in _session(rng, vocab, cum, per)]
        title = " ".join(rng.choices(vocab, cum_weights=cum, k=4))
        store.import_session_log(
            new_id("sess"), "/tmp/bench", title, {"model": "scripted:echo"}, [], events, now_iso()
        )
        if s and s % 1000 == 0:
            ctx.log(f"search: {label} {s:,} sessions written ({time.monotonic() - t0:.0f} s)")
    return [vocab[r] for r in rng.sample(range(300, 3000), QUERIES)]


def _like(home: Path, url: str | None, words: list[str]) -> list[float]:
    """The peer: each word looked for in every message's text, no index, on a
    connection of its own."""
    if url is None:
        conn = sqlite3.connect(db_path(home))
        sql = "SELECT session_id, message_id FROM texts WHERE body LIKE ?"
    else:
        import psycopg

        conn = psycopg.connect(url)  # type: ignore[assignment]
        sql = "SELECT session_id, message_id FROM tl_texts WHERE body LIKE %s"
    out: list[float] = []
    try:
        for word in words:
            t0 = time.perf_counter()
            conn.execute(sql, (f"% {word} %",)).fetchall()
            out.append((time.perf_counter() - t0) * 1000)
    finally:
        conn.close()
    return out


def _indexed(store: SessionStore, word: str) -> float:
    t0 = time.perf_counter()
    store.search(query_terms(word), None, 20, 0)
    return (time.perf_counter() - t0) * 1000


def _wire(conn: Connection, query: str) -> float:
    pending = conn.send("session/search", {"query": query, "limit": 20})
    pending.wait(120)
    return pending.received_ms


def _measure(ctx: Context, backend: str, url: str | None) -> list[Row]:
    home = ctx.scratch.home(f"search-{backend.lower()}")
    sessions, per = ctx.n(10_000, 300), 100
    store = open_store(db_path(home), url)
    try:
        words = _fill(store, sessions, per, ctx, backend)
        indexed = [_indexed(store, w) for w in words]
    finally:
        store.close()
    like = _like(home, url, words)
    ctx.log(f"search: {backend} filled and scanned")
    conn = spawn(THREADLINE, home, env={"THREADLINE_STORE": url} if url else {})
    try:
        _wire(conn, words[0])  # the first request builds the method's models
        one = [_wire(conn, w) for w in words for _ in range(3)]
        two = [_wire(conn, f"{a} {b}") for a, b in itertools.pairwise(words)]
    finally:
        conn.close()
    size = f"{sessions:,} sessions × {per} messages"
    s_one, s_two = summarize(one), summarize(two)
    s_idx, s_like = summarize(indexed), summarize(like)
    return [
        Row(
            FIGURE,
            f"one word, {size}, {backend} (over the wire)",
            ms(s_one.p50),
            ms_spread(s_one),
            "",
            f"< {ms(TARGET_MS)}",
            verdict(s_one.p50 < TARGET_MS),
        ),
        Row(
            FIGURE,
            f"two words, {size}, {backend} (over the wire)",
            ms(s_two.p50),
            ms_spread(s_two),
            "",
            f"< {ms(TARGET_MS)}",
            verdict(s_two.p50 < TARGET_MS),
        ),
        Row(
            FIGURE,
            f"one word in the store, {backend}: index vs LIKE scan (peer)",
            ms(s_idx.p50),
            ms_spread(s_idx),
            f"LIKE scan {ms(s_like.p50)}: index {ratio(s_idx.ratio(s_like))} of it",
        ),
    ]


def run(ctx: Context) -> list[Row]:
    rows = _measure(ctx, "SQLite", None)
    server = PgServer()
    try:
        rows += _measure(ctx, "PostgreSQL", server.new_database())
    finally:
        server.close()
    return rows
