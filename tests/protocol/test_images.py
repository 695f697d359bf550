"""Images over the wire with a real ``threadline serve``: prompts and MCP tool results
stored once as blobs, shown inline or as references, sent as the model takes them
(the scripted model records what it was given), refused with -32602 when bad, shared
by forks and freed with the last session that references them, on both stores."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.imagefiles import b64, gif, image_block, png
from tests.support import SidecarClient, count_rows, start_sidecar

MCP_IMAGE_SERVER = str(Path(__file__).resolve().parents[1] / "tools" / "mcp_image_server.py")
SHOT = png(64, 32)
SHOT_HASH = hashlib.sha256(SHOT).hexdigest()


def model(record: Path, *rounds: list[dict[str, Any]], **marks: Any) -> str:
    """A scripted model that records each request it gets (``images=True``: it sees
    images, in user messages only unless ``toolResultImages``)."""
    script = {"rounds": list(rounds) or [[{"text": "ok"}]], "record": str(record), **marks}
    return "scripted:" + json.dumps(script)


def recorded(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


async def prompt(client: SidecarClient, sid: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return await client.call("session/prompt", {"sessionId": sid, "prompt": list(blocks)})


async def history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


def stored(data: bytes, **facts: Any) -> dict[str, Any]:
    """An image block as a client that did not ask for references is shown it."""
    image = {"blob": hashlib.sha256(data).hexdigest(), "size": len(data), **facts}
    return {
        "type": "image",
        "mimeType": "image/png",
        "data": b64(data),
        "_meta": {"threadline": {"image": image}},
    }


async def test_an_mcp_tool_image_is_kept_shown_and_sent_after_the_results(
    sidecar: SidecarClient, home: Path, tmp_path: Path
) -> None:
    record = tmp_path / "record.jsonl"
    call = {"tool_call": {"name": "shots__screenshot", "arguments": {"width": 40, "height": 30}}}
    # steered: the user message that carries the image follows the tool's result
    m = model(record, [call], [{"text": "A red screen."}], images=True, steered=True)
    entry = {"name": "shots", "command": sys.executable, "args": [MCP_IMAGE_SERVER], "env": []}
    params = {
        "cwd": str(tmp_path),
        "mcpServers": [entry],
        "_meta": {"threadline": {"model": m, "builtinTools": False}},
    }
    sid = (await sidecar.call("session/new", params, timeout=60))["sessionId"]
    assert (await sidecar.prompt(sid, "Take a screenshot."))["stopReason"] == "end_turn"

    shot = png(40, 30, shade=7)
    shot_text = b64(shot)
    [result] = [
        b
        for msg in await history(sidecar, sid)
        for b in msg["content"]
        if b["type"] == "tool_result"
    ]
    assert result["content"] == [stored(shot, width=40, height=30)]
    db = sqlite3.connect(home / "threadline.db")
    try:
        payloads = " ".join(str(p) for (p,) in db.execute("SELECT payload FROM events"))
    finally:
        db.close()
    assert shot_text not in payloads, "events keep hashes, never the bytes (rawOutput too)"
    [shown] = [
        u["update"]
        for u in sidecar.updates
        if u["update"]["sessionUpdate"] == "tool_call_update"
        and u["update"].get("status") == "completed"
    ]
    assert shown["content"] == [{"type": "content", "content": stored(shot, width=40, height=30)}]

    # a model that takes images in user messages only: the result says it follows
    second = recorded(record)[1]["messages"]
    assert second[-2]["role"] == "tool"
    assert second[-2]["content"] == "[image: sent in the next user message]"
    assert second[-1] == {
        "role": "user",
        "content": "The image shots__screenshot returned:",
        "images": [
            {"mimeType": "image/png", "width": 40, "height": 30, "tokens": 255, "data": b64(shot)}
        ],
    }
    assert await sidecar.call("session/close", {"sessionId": sid}) == {}


async def test_a_text_only_model_reads_a_placeholder_and_the_session_warns_once(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    record = tmp_path / "record.jsonl"
    sid = await sidecar.new_session(cwd=str(tmp_path), model=model(record))
    for _ in range(2):
        done = await prompt(sidecar, sid, {"type": "text", "text": "Look"}, image_block(SHOT))
        assert done["stopReason"] == "end_turn"
    first = recorded(record)[0]["messages"][-1]
    assert first == {
        "role": "user",
        "content": "Look\n\n[image: 64×32 PNG, 1 KB — this model cannot see images]",
    }
    warnings = [
        u["update"]["_meta"]["threadline"]["warning"]
        for u in sidecar.updates
        if "warning" in u["update"].get("_meta", {}).get("threadline", {})
    ]
    assert len(warnings) == 1 and "cannot see images" in warnings[0]


async def test_initialize_says_which_models_see_images(home: Path, tmp_path: Path) -> None:
    """``promptCapabilities.image`` is true when any model sees images (a client lets
    its user attach one), and each model says whether it does (the session's model
    decides; the default one here cannot)."""
    config = tmp_path / "threadline.toml"
    config.write_text(
        '[providers.openai]\nbase_url = "http://127.0.0.1:9/v1"\n\n'
        '[models.eyes]\nprovider = "openai"\nmodel = "vision"\nimages = true\n\n'
        '[models.plain]\nprovider = "openai"\nmodel = "plain"\n'
    )
    client = await start_sidecar(home, initialize=False, env={"THREADLINE_CONFIG": str(config)})
    try:
        caps = (await client.initialize())["agentCapabilities"]
        assert caps["promptCapabilities"]["image"] is True
        meta = caps["_meta"]["threadline"]
        seen = {m["modelId"]: m["images"] for m in meta["models"]}
        assert seen == {meta["defaultModel"]: False, "eyes": True, "plain": False}
    finally:
        await client.stop()


async def test_references_when_asked_and_session_blob_fetches_them(
    home: Path, tmp_path: Path
) -> None:
    record = tmp_path / "record.jsonl"
    refs = await start_sidecar(home, initialize=False)
    try:
        caps = {"_meta": {"threadline": {"imageReferences": True}}}
        await refs.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        sid = await refs.new_session(cwd=str(tmp_path), model=model(record, images=True))
        await prompt(refs, sid, {"type": "text", "text": "Look"}, image_block(SHOT))
        [user] = [m for m in await history(refs, sid) if m["role"] == "user"]
        uri = f"threadline-blob:{SHOT_HASH}"
        facts = {"blob": SHOT_HASH, "width": 64, "height": 32, "size": len(SHOT)}
        reference = {
            "type": "image",
            "mimeType": "image/png",
            "data": "",
            "uri": uri,
            "_meta": {"threadline": {"image": facts}},
        }
        assert user["content"][1] == reference
        got = await refs.call("session/blob", {"sessionId": sid, "uri": uri})
        assert got == {
            "uri": uri,
            "mimeType": "image/png",
            "data": b64(SHOT),
            "size": len(SHOT),
            "width": 64,
            "height": 32,
        }
        with pytest.raises(JsonRpcException) as err:
            await refs.call(
                "session/blob", {"sessionId": sid, "uri": "threadline-blob:" + "0" * 64}
            )
        assert err.value.code == -32602
        # a prompt may name a stored image by its reference
        await prompt(refs, sid, {"type": "image", "mimeType": "image/png", "uri": uri})
        assert recorded(record)[-1]["messages"][-1]["images"][0]["data"] == b64(SHOT)
    finally:
        await refs.stop()

    inline = await start_sidecar(home)
    try:
        await inline.call(
            "session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
        )
        chunks = [
            u["update"]["content"]
            for u in inline.updates
            if u["update"]["sessionUpdate"] == "user_message_chunk"
            and u["update"]["content"]["type"] == "image"
        ]
        assert chunks == [stored(SHOT, width=64, height=32)] * 2
    finally:
        await inline.stop()


async def test_bad_images_are_refused_with_a_reason_and_nothing_is_stored(
    sidecar: SidecarClient, home: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "shot.png").write_bytes(SHOT)
    outside = tmp_path / "elsewhere.png"
    outside.write_bytes(SHOT)
    sid = await sidecar.new_session(cwd=str(workspace), model=model(tmp_path / "r.jsonl"))
    huge = SHOT + b"\0" * (30 * 1024 * 1024)
    bad = {
        "not an image": (
            {"type": "image", "mimeType": "image/png", "data": b64(b"GIF? no, text")},
            "not a PNG",
        ),
        "30 MB": (image_block(huge), "30.0 MB"),
        "truncated base64": (
            {"type": "image", "mimeType": "image/png", "data": b64(SHOT)[:-3]},
            "base64",
        ),
        "outside the workspace": (
            {"type": "image", "mimeType": "image/png", "uri": outside.as_uri()},
            "outside",
        ),
        "no such file": (
            {"type": "image", "mimeType": "image/png", "uri": "missing.png"},
            "no image file",
        ),
        "neither": ({"type": "image", "mimeType": "image/png"}, "needs base64 data or a uri"),
    }
    for name, (block, reason) in bad.items():
        with pytest.raises(JsonRpcException) as err:
            await sidecar.call(
                "session/prompt",
                {"sessionId": sid, "prompt": [{"type": "text", "text": name}, block]},
                timeout=120,
            )
        assert err.value.code == -32602, name
        assert reason in err.value.message and "prompt block 1" in err.value.message, name
    assert await history(sidecar, sid) == []
    assert count_rows(home, None, "blobs") == 0 and count_rows(home, None, "events", sid) == 0

    # inside the workspace, by uri; and the type is what the bytes say, not the label
    inside = {"type": "image", "mimeType": "image/png", "uri": (workspace / "shot.png").as_uri()}
    mislabelled = {"type": "image", "mimeType": "image/jpeg", "data": b64(gif(10, 20))}
    assert (await prompt(sidecar, sid, inside, mislabelled))["stopReason"] == "end_turn"
    user = (await history(sidecar, sid))[0]
    assert [b["mimeType"] for b in user["content"]] == ["image/png", "image/gif"]
    assert user["content"][0]["data"] == b64(SHOT)
    assert user["content"][0]["_meta"]["threadline"]["image"]["source"] == inside["uri"]
    assert count_rows(home, None, "blobs") == 2


async def test_context_counts_an_image_at_its_cost_and_compaction_leaves_a_placeholder(
    sidecar: SidecarClient, tmp_path: Path
) -> None:
    record = tmp_path / "record.jsonl"
    long = [{"text": "A long answer about the picture and what it shows. " * 20}]
    sees = model(record, long, images=True, summary=[{"text": "Looked at a picture."}])
    big = png(1280, 720)
    used: list[int] = []
    for blocks in ([], [image_block(big)]):
        sid = await sidecar.new_session(cwd=str(tmp_path), model=sees)
        await prompt(sidecar, sid, {"type": "text", "text": "Look at this."}, *blocks)
        used.append((await sidecar.call("session/context", {"sessionId": sid}))["used"])
    # OpenAI's formula: 1280×720 → 1365×768 → 3×2 tiles: 85 + 170 × 6
    assert used[1] - used[0] == 1105
    await prompt(sidecar, sid, {"type": "text", "text": "And now?"})
    done = await sidecar.call("session/compact", {"sessionId": sid, "keepTurns": 0})
    assert done["_meta"]["threadline"]["compacted"] is True
    after = (await sidecar.call("session/context", {"sessionId": sid}))["used"]
    assert after < used[1] - 1000, "the compacted image no longer counts"
    await prompt(sidecar, sid, {"type": "text", "text": "Still there?"})
    last = recorded(record)[-1]
    assert last["purpose"] == "turn"
    # the task message stays, its image a placeholder; the rest is the summary
    task = last["messages"][1]
    assert task["content"].startswith("Look at this.\n\n[image: 1280×720 PNG, ")
    assert task["content"].endswith(" KB — compacted]") and "images" not in task
    assert b64(big)[:100] not in json.dumps(last)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)
async def test_forks_share_one_blob_and_the_last_deletion_frees_it(
    home: Path, tmp_path: Path, store_url: str | None
) -> None:
    client = await start_sidecar(home, env={"THREADLINE_STORE": store_url} if store_url else {})

    def rows(table: str) -> int:
        return count_rows(home, store_url, table)

    try:
        m = model(tmp_path / "r.jsonl")
        a = await client.new_session(cwd=str(tmp_path), model=m)
        await prompt(client, a, {"type": "text", "text": "Look"}, image_block(SHOT))
        b = (await client.call("session/fork", {"sessionId": a}))["sessionId"]
        assert (rows("blobs"), rows("blob_refs")) == (1, 1), "a fork adds no row"
        [user] = [x for x in await history(client, b) if x["role"] == "user"]
        assert user["content"][1] == stored(SHOT, width=64, height=32)
        c = await client.new_session(cwd=str(tmp_path), model=m)
        await prompt(client, c, image_block(SHOT))
        assert (rows("blobs"), rows("blob_refs")) == (1, 2), "the same bytes are stored once"
        await client.call("session/delete", {"sessionId": c})
        assert (rows("blobs"), rows("blob_refs")) == (1, 1)
        await client.call("session/delete", {"sessionId": a})
        assert rows("blobs") == 1, "the fork still reads its base's image"
        [user] = [x for x in await history(client, b) if x["role"] == "user"]
        assert user["content"][1]["data"] == b64(SHOT)
        await client.call("session/delete", {"sessionId": b})
        assert (rows("blobs"), rows("blob_refs")) == (0, 0)
    finally:
        await client.stop()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)
async def test_a_session_serves_only_its_own_images(
    home: Path, tmp_path: Path, store_url: str | None
) -> None:
    """session/blob (and a prompt's ``threadline-blob:`` reference) reaches an image only
    through a session that holds it, or a fork that reads it from its base."""
    client = await start_sidecar(home, env={"THREADLINE_STORE": store_url} if store_url else {})
    try:
        m = model(tmp_path / "r.jsonl", images=True)
        a = await client.new_session(cwd=str(tmp_path), model=m)
        await prompt(client, a, {"type": "text", "text": "Look"}, image_block(SHOT))
        uri = f"threadline-blob:{SHOT_HASH}"
        fork = (await client.call("session/fork", {"sessionId": a}))["sessionId"]
        for sid in (a, fork):
            got = await client.call("session/blob", {"sessionId": sid, "uri": uri})
            assert got["data"] == b64(SHOT)
        other = await client.new_session(cwd=str(tmp_path), model=m)
        with pytest.raises(JsonRpcException) as err:
            await client.call("session/blob", {"sessionId": other, "uri": uri})
        assert err.value.code == -32602
        assert f"session {other} holds no image {uri}" in err.value.message
        with pytest.raises(JsonRpcException) as err:
            await prompt(client, other, {"type": "image", "mimeType": "image/png", "uri": uri})
        assert err.value.code == -32602 and "no stored image" in err.value.message
        assert await history(client, other) == []
    finally:
        await client.stop()


async def test_an_export_carries_its_images_and_an_import_stores_them_again(
    sidecar: SidecarClient, home: Path, tmp_path: Path
) -> None:
    sid = await sidecar.new_session(cwd=str(tmp_path), model=model(tmp_path / "r.jsonl"))
    await prompt(sidecar, sid, {"type": "text", "text": "Look"}, image_block(SHOT))
    exported = await sidecar.call("session/export", {"sessionId": sid, "format": "jsonl"})
    assert b64(SHOT) in exported["content"], "the file stands alone"
    await sidecar.call("session/delete", {"sessionId": sid})
    assert count_rows(home, None, "blobs") == 0
    imported = await sidecar.call("session/import", {"content": exported["content"]})
    [user] = [m for m in await history(sidecar, imported["sessionId"]) if m["role"] == "user"]
    assert user["content"][1] == stored(SHOT, width=64, height=32)
    assert (count_rows(home, None, "blobs"), count_rows(home, None, "blob_refs")) == (1, 1)
