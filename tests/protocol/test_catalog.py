"""Rename, archive, tags, search, export and import over the wire, on both stores, with
bad input: each method answers, and bad params are -32602, never -32603."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support import SidecarClient, scripted, start_sidecar

TOOLY = scripted(
    [{"tool_call": {"name": "read_file", "arguments": {"path": "notes.txt"}}}],
    [{"text": "The notes say to descale the kettle with citric acid."}],
)
PLAIN = scripted([{"text": "Rhubarb grows in spring."}])


@pytest.fixture
async def side(home: Path, store_url: str | None) -> AsyncIterator[SidecarClient]:
    client = await start_sidecar(home, env={"THREADLINE_STORE": store_url} if store_url else {})
    try:
        yield client
    finally:
        await client.stop()


async def session_with(side: SidecarClient, cwd: Path, model: str, prompt: str) -> str:
    sid = await side.new_session(cwd=str(cwd), model=model)
    await side.prompt(sid, prompt)
    return sid


def code(exc: pytest.ExceptionInfo[JsonRpcException]) -> int:
    return int(exc.value.code)


async def test_search_finds_prompts_answers_and_tool_results_with_snippets(
    side: SidecarClient, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("Kettle: descale monthly, zebra-proof.\n")
    a = await session_with(side, tmp_path, TOOLY, "What do my notes say about the kettle?")
    b = await session_with(side, tmp_path / "..", PLAIN, "When does rhubarb grow?")
    result = await side.call("session/search", {"query": "kettle"})
    hits = result["hits"]
    assert {h["sessionId"] for h in hits} == {a}
    assert {h["role"] for h in hits} >= {"user", "assistant", "tool", "title"}
    history = (await side.call("session/history", {"sessionId": a}))["messages"]
    ids = {m["messageId"] for m in history}
    assert all(h["messageId"] in ids for h in hits if h["role"] != "title")
    tool = next(h for h in hits if h["role"] == "tool")
    assert any(s["match"] and s["text"].lower() == "kettle" for s in tool["snippet"])
    assert "zebra" in "".join(s["text"] for s in tool["snippet"])
    assert [
        h["sessionId"] for h in (await side.call("session/search", {"query": "zebra"}))["hits"]
    ] == [a]
    only_b = await side.call("session/search", {"query": "rhubarb", "cwd": str(tmp_path / "..")})
    assert {h["sessionId"] for h in only_b["hits"]} == {b}
    assert (await side.call("session/search", {"query": "rhubarb", "cwd": str(tmp_path)}))[
        "hits"
    ] == []
    # pages
    first = await side.call("session/search", {"query": "kettle", "limit": 1})
    assert len(first["hits"]) == 1 and first["nextCursor"]
    second = await side.call(
        "session/search", {"query": "kettle", "limit": 1, "cursor": first["nextCursor"]}
    )
    assert second["hits"] and second["hits"][0] != first["hits"][0]


@pytest.mark.parametrize(
    "query",
    ['"', "*", "(", "NEAR", "-", 'kettle" OR (x*', "NEAR(kettle rhubarb, 2)", "-kettle", "a:b^c"],
)
async def test_fts_syntax_is_searched_literally(
    side: SidecarClient, tmp_path: Path, query: str
) -> None:
    await session_with(side, tmp_path, PLAIN, "kettle and rhubarb")
    try:
        result = await side.call("session/search", {"query": query})
    except JsonRpcException as exc:
        assert exc.code == -32602 and "no words" in str(exc.message)
        assert not re.search(r"\w", query)
        return
    assert isinstance(result["hits"], list)


@pytest.mark.parametrize(
    "params",
    [
        {"query": ""},
        {"query": "   "},
        {"query": "x" * 10_240},
        {"query": "kettle", "limit": 0},
        {"query": "kettle", "limit": 1000},
        {"query": "kettle", "cursor": "nonsense"},
        {"query": '"*()-'},
        {},
    ],
)
async def test_bad_search_input_is_invalid_params(
    side: SidecarClient, params: dict[str, Any]
) -> None:
    with pytest.raises(JsonRpcException) as exc:
        await side.call("session/search", params)
    assert code(exc) == -32602


async def test_rename_is_shown_to_the_caller_and_seen_by_another_sidecar(
    side: SidecarClient, tmp_path: Path, home: Path, store_url: str | None
) -> None:
    sid = await session_with(side, tmp_path, PLAIN, "kettle")
    assert (
        await side.call("session/set_title", {"sessionId": sid, "title": "  Spring\n garden "})
        == {}
    )
    update = await side.wait_update(
        lambda u: (
            u["sessionId"] == sid
            and u["update"]["sessionUpdate"] == "session_info_update"
            and u["update"].get("title") == "Spring garden"
        )
    )
    assert update["update"]["updatedAt"]
    other = await start_sidecar(home, env={"THREADLINE_STORE": store_url} if store_url else {})
    try:
        listed = (await other.call("session/list", {}))["sessions"]
        assert [s["title"] for s in listed if s["sessionId"] == sid] == ["Spring garden"]
        hits = (await other.call("session/search", {"query": "spring garden"}))["hits"]
        assert hits[0]["role"] == "title" and hits[0]["sessionId"] == sid
    finally:
        await other.stop()
    for bad in (
        {"sessionId": sid, "title": ""},
        {"sessionId": sid, "title": " \n "},
        {"sessionId": sid},
    ):
        with pytest.raises(JsonRpcException) as exc:
            await side.call("session/set_title", bad)
        assert code(exc) == -32602
    with pytest.raises(JsonRpcException) as exc:
        await side.call("session/set_title", {"sessionId": "sess_nope", "title": "x"})
    assert code(exc) == -32002


async def test_archive_tags_and_the_list_entries(side: SidecarClient, tmp_path: Path) -> None:
    a = await session_with(side, tmp_path, PLAIN, "First line of a\nlonger prompt")
    b = await side.new_session(cwd=str(tmp_path), model=PLAIN)
    entries = {s["sessionId"]: s for s in (await side.call("session/list", {}))["sessions"]}
    meta = entries[a]["_meta"]
    assert meta["messageCount"] == 2 and meta["model"] == PLAIN and meta["archived"] is False
    assert meta["preview"] == "First line of a" and meta["tags"] == []
    assert entries[b]["_meta"]["preview"] is None and entries[a]["updatedAt"]
    assert await side.call("session/archive", {"sessionId": a}) == {}
    assert [s["sessionId"] for s in (await side.call("session/list", {}))["sessions"]] == [b]
    archived = await side.call("session/list", {"_meta": {"threadline": {"archived": True}}})
    assert [s["sessionId"] for s in archived["sessions"]] == [a]
    assert archived["sessions"][0]["_meta"]["archived"] is True
    hits = (await side.call("session/search", {"query": "longer"}))["hits"]
    assert hits and all(h["archived"] for h in hits), "archived sessions stay searchable"
    assert (await side.call("session/history", {"sessionId": a}))["messages"], "and loadable"
    await side.call("session/archive", {"sessionId": a, "archived": False})
    await side.call("session/set_tags", {"sessionId": a, "tags": ["work", "work", "q3"]})
    tagged = await side.call("session/list", {"_meta": {"threadline": {"tag": "work"}}})
    assert [(s["sessionId"], s["_meta"]["tags"]) for s in tagged["sessions"]] == [
        (a, ["q3", "work"])
    ]
    for method, params in (
        ("session/set_tags", {"sessionId": a, "tags": ["Not Valid"]}),
        ("session/set_tags", {"sessionId": a, "tags": "work"}),
        ("session/archive", {"sessionId": a, "archived": "yes"}),
        ("session/list", {"_meta": {"threadline": {"tag": "%"}}}),
        ("session/list", {"_meta": {"threadline": {"sort": "title"}}}),
    ):
        with pytest.raises(JsonRpcException) as exc:
            await side.call(method, params)
        assert code(exc) == -32602, (method, params)
    with pytest.raises(JsonRpcException) as exc:
        await side.call("session/archive", {"sessionId": "sess_nope"})
    assert code(exc) == -32002


def normalized(jsonl: str) -> list[dict[str, Any]]:
    """The events of an export with ids replaced by their order of appearance."""
    text = "\n".join(jsonl.splitlines()[1:])
    seen: dict[str, str] = {}
    for found in re.findall(r"\b(?:msg|call)_[0-9a-f]{28}\b", text):
        seen.setdefault(found, f"id{len(seen)}")
    for old, new in seen.items():
        text = text.replace(old, new)
    return [json.loads(line) for line in text.splitlines()]


async def test_export_import_round_trip_is_equal_event_for_event(
    side: SidecarClient, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("descale monthly\n")
    sid = await session_with(side, tmp_path, TOOLY, "What do my notes say?")
    fork = (await side.call("session/fork", {"sessionId": sid}))["sessionId"]
    await side.call("session/set_tags", {"sessionId": fork, "tags": ["kept"]})
    exported = (await side.call("session/export", {"sessionId": fork, "format": "jsonl"}))[
        "content"
    ]
    header = json.loads(exported.splitlines()[0])
    assert header["threadline"] == "session-log" and header["parentSessionId"] == sid
    imported = await side.call("session/import", {"content": exported})
    new = imported["sessionId"]
    assert new not in (sid, fork) and imported["messages"] == 4 and imported["events"] == 4
    again = (await side.call("session/export", {"sessionId": new, "format": "jsonl"}))["content"]
    assert normalized(again) == normalized(exported)
    assert json.loads(again.splitlines()[0])["tags"] == ["kept"]
    old_ids = set(re.findall(r"\b(?:msg|call)_[0-9a-f]{28}\b", exported))
    assert not old_ids & set(re.findall(r"\b(?:msg|call)_[0-9a-f]{28}\b", again)), "ids kept unique"
    # a second import of the same file is another session again
    assert (await side.call("session/import", {"content": exported}))["sessionId"] != new
    history = (await side.call("session/history", {"sessionId": new}))["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
    markdown = (await side.call("session/export", {"sessionId": sid}))["content"]
    assert markdown.startswith("# What do my notes say?")
    assert "## You" in markdown and "<details><summary>Tool:" in markdown
    assert "descale monthly" in markdown and "citric acid" in markdown


async def test_a_bad_import_names_its_first_bad_line_and_imports_nothing(
    side: SidecarClient, tmp_path: Path
) -> None:
    sid = await session_with(side, tmp_path, PLAIN, "one prompt")
    good = (await side.call("session/export", {"sessionId": sid, "format": "jsonl"}))["content"]
    lines = good.splitlines()
    before = len((await side.call("session/list", {}))["sessions"])
    cases = {
        "not JSON": (2, [lines[0], "{nope", *lines[2:]]),
        "seq must be": (3, [lines[0], lines[1], lines[1]]),
        "unknown mutation kind": (
            2,
            [lines[0], json.dumps({"seq": 1, "kind": "x", "payload": {}})],
        ),
        "invalid message": (
            3,
            [
                lines[0],
                lines[1],
                json.dumps(
                    {"seq": 2, "kind": "user_message", "payload": {"message": {"messageId": "m"}}}
                ),
            ],
        ),
        "appears twice": (
            3,
            [lines[0], lines[1], json.dumps({**json.loads(lines[1]), "seq": 2})],
        ),
        "not a Threadline session log": (1, ['{"hello": 1}', *lines[1:]]),
        "lacks": (2, [lines[0], json.dumps({"seq": 1, "kind": "user_message", "payload": {}})]),
    }
    for why, (line, content) in cases.items():
        with pytest.raises(JsonRpcException) as exc:
            await side.call("session/import", {"content": "\n".join(content)})
        assert code(exc) == -32602, why
        assert f"line {line}:" in str(exc.value.message) and why in str(exc.value.message), (
            why,
            exc.value.message,
        )
    assert len((await side.call("session/list", {}))["sessions"]) == before, "nothing half-imported"
