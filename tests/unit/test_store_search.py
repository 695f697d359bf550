"""The catalog and search index of both stores: ranking, snippets, filters, the index
kept in the append's transaction, and an older store's index built by its upgrade."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.unit.conftest import Opener
from threadline.store.base import NewEvent, SessionStore
from threadline.store.search import MARK_END, MARK_START, query_terms


def message(mid: str, role: str, text: str) -> dict[str, Any]:
    if role == "tool":
        content = [
            {
                "type": "tool_result",
                "toolUseId": "call_1",
                "content": [{"type": "text", "text": text}],
            }
        ]
    else:
        content = [{"type": "text", "text": text}]
    return {"messageId": mid, "turnId": "u1", "role": role, "content": content, "createdAt": "t"}


def event(mid: str, role: str, text: str) -> NewEvent:
    kind = {"user": "user_message", "assistant": "assistant_message", "tool": "tool_result"}[role]
    return NewEvent(kind, {"message": message(mid, role, text)}, (mid,))


def search(store: SessionStore, query: str, cwd: str | None = None, limit: int = 20):
    return store.search(query_terms(query), cwd, limit, 0)


def fill(store: SessionStore) -> None:
    store.create_session("a", "/p1", {"model": "m"}, "t0", title="Kettle descaling")
    store.append(
        "a",
        [
            event("a1", "user", "How do I descale a kettle?\nIt is furred up."),
            event("a2", "assistant", "Boil vinegar and water in the kettle."),
            event("a3", "tool", "kettle manual: descale monthly with citric acid"),
        ],
        "t1",
    )
    store.create_session("b", "/p2", {"model": "m"}, "t0", title="Garden")
    store.append(
        "b",
        [event("b1", "user", "Plant tomatoes"), event("b2", "assistant", "Water the kettle?")],
        "t2",
    )


def test_search_ranks_titles_and_messages_with_snippets(open_store: Opener) -> None:
    store = open_store()
    fill(store)
    hits = search(store, "kettle")
    assert {(h.session_id, h.message_id) for h in hits} == {
        ("a", None),
        ("a", "a1"),
        ("a", "a2"),
        ("a", "a3"),
        ("b", "b2"),
    }
    assert (hits[0].session_id, hits[0].role) == ("a", "title"), "a title hit counts double"
    tool = next(h for h in hits if h.message_id == "a3")
    assert tool.role == "tool" and f"{MARK_START}kettle{MARK_END}" in tool.snippet.lower()
    assert tool.title == "Kettle descaling" and tool.cwd == "/p1" and not tool.archived
    # every word must match; cwd narrows
    assert [h.message_id for h in search(store, "citric kettle")] == ["a3"]
    assert {h.session_id for h in search(store, "kettle", cwd="/p2")} == {"b"}
    assert search(store, "zeppelin") == []
    # a page of one, then the next
    first, second = store.search(["kettle"], None, 1, 0), store.search(["kettle"], None, 1, 1)
    assert len(first) == len(second) == 1 and first[0] != second[0]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "*",
        "(",
        ")",
        "NEAR",
        "-",
        'kettle" OR (b*',
        "NEAR(kettle water)",
        "kettle -water",
        "^a:b",
    ],
)
def test_query_syntax_is_taken_literally(open_store: Opener, query: str) -> None:
    store = open_store()
    fill(store)
    hits = search(store, query)  # never an error
    words = query_terms(query)
    for h in hits:
        text = h.snippet.replace(MARK_START, "").replace(MARK_END, "").lower()
        assert all(w.lower() in text or w.lower() in (h.title or "").lower() for w in words)


def test_a_long_query_is_cut_to_its_first_words() -> None:
    assert len(query_terms("word " * 3000)) == 32
    assert query_terms('"*()-') == []


def test_archive_and_tags_filter_the_list_and_search_still_finds_archived(
    open_store: Opener,
) -> None:
    store = open_store()
    fill(store)
    assert store.set_archived("a", True) and not store.set_archived("nope", True)
    assert store.list_session_ids() == ["b"]
    assert store.list_session_ids(archived=True) == ["a"]
    hit = search(store, "citric")[0]
    assert hit.session_id == "a" and hit.archived
    store.set_archived("a", False)
    assert set(store.list_session_ids()) == {"a", "b"}
    assert store.set_tags("a", ["work", "home_lab"]) and store.set_tags("b", ["homealab"])
    assert store.list_session_ids(tag="home_lab") == ["a"], "_ is not a wildcard"
    assert store.list_session_ids(tag="work", cwd="/p1") == ["a"]
    assert store.list_session_ids(tag="work", cwd="/p2") == []
    row = store.get_session("a")
    assert row is not None and row.tags == ("home_lab", "work") and not row.archived


def test_preview_titles_forks_and_deletes_keep_the_index_in_step(open_store: Opener) -> None:
    store = open_store()
    fill(store)
    a = store.get_session("a")
    assert a is not None and a.preview == "How do I descale a kettle?"
    store.update_session("a", title="Limescale")
    assert all(h.role != "title" for h in search(store, "descaling"))
    assert search(store, "limescale")[0].role == "title"
    fork = store.fork_session("f", a, "a", a.last_seq, a.message_count, "a3", "/p1", "t3", "Fork")
    assert fork.preview == a.preview
    store.append("f", [event("f1", "user", "zucchini bread")], "t4")
    assert [h.session_id for h in search(store, "zucchini")] == ["f"]
    store.delete_session("f")
    assert search(store, "zucchini") == []
    store.delete_session("b")
    assert {h.session_id for h in search(store, "kettle")} == {"a"}


def test_a_failed_import_leaves_nothing(open_store: Opener) -> None:
    store = open_store()
    fill(store)
    with pytest.raises(Exception):  # noqa: B017 - the driver's own integrity error
        store.import_session_log(
            "imp",
            "/p",
            "Imported",
            {"model": "m"},
            ["x"],
            [event("n1", "user", "quince jam"), event("a1", "user", "duplicate id")],
            "t5",
        )
    assert store.get_session("imp") is None and search(store, "quince") == []
    row = store.import_session_log(
        "imp", "/p", "Imported", {"model": "m"}, ["x"], [event("n1", "user", "quince jam")], "t5"
    )
    assert row.message_count == 1 and row.tags == ("x",) and row.preview == "quince jam"
    assert [h.message_id for h in search(store, "quince")] == ["n1"]


def _old_sqlite(path: Path) -> None:
    """Turn a store into what Threadline wrote before the catalog (schema 3)."""
    db = sqlite3.connect(path)
    for statement in (
        "DROP TRIGGER texts_ai",
        "DROP TRIGGER texts_ad",
        "DROP TABLE texts_fts",
        "DROP TABLE texts",
        "ALTER TABLE sessions DROP COLUMN archived",
        "ALTER TABLE sessions DROP COLUMN tags",
        "ALTER TABLE sessions DROP COLUMN preview",
        "UPDATE meta SET value='3' WHERE key='schema_version'",
    ):
        db.execute(statement)
    db.commit()
    db.close()


def _old_postgres(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE tl_texts")
        conn.execute(
            "ALTER TABLE tl_sessions DROP COLUMN archived, DROP COLUMN tags, DROP COLUMN preview"
        )
        conn.execute("UPDATE tl_meta SET value='2' WHERE key='schema_version'")


def test_an_older_store_gets_its_index_built_by_the_upgrade(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, open_store: Opener
) -> None:
    store = open_store()
    fill(store)
    a = store.get_session("a")
    assert a is not None
    store.fork_session("f", a, "a", a.last_seq, a.message_count, "a3", "/p1", "t3", "Fork")
    store.close()
    if backend == "sqlite":
        _old_sqlite(tmp_path / "db.sqlite")
    else:
        _old_postgres(str(request.getfixturevalue("pg_url")))
    store = open_store()
    assert [(h.session_id, h.message_id) for h in search(store, "citric")] == [("a", "a3")]
    assert search(store, "garden")[0].role == "title"
    assert store.list_session_ids(archived=True) == []
    for sid in ("a", "f"):
        row = store.get_session(sid)
        assert row is not None and row.preview == "How do I descale a kettle?" and row.tags == ()
    assert store.get_session("b").preview == "Plant tomatoes"  # type: ignore[union-attr]
    # and it keeps up: appended messages are found at once, also by another connection
    store.append("b", [event("b3", "user", "rhubarb crumble")], "t9")
    assert [h.message_id for h in search(open_store(), "rhubarb")] == ["b3"]
    # opening it again does not index twice
    assert len(search(open_store(), "citric")) == 1
