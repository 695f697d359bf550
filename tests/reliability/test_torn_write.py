"""Torn writes: a WAL cut (or damaged) after a crash, and a truncated database file.

What SQLite guarantees, and so what Threadline can promise (docs/reliability.md):

* Threadline commits every mutation in WAL mode with ``synchronous=NORMAL``: a commit
  is in the WAL file (the OS page cache) when it returns, so a *process* crash loses
  nothing committed. A power cut may lose the last commits not yet synced; a
  checkpoint (at clean exit, or every ~1000 pages) syncs and copies them into the
  database file.
* After a crash, opening the database replays the WAL's valid frames up to the last
  complete commit frame (salts and cumulative checksums). A torn tail is dropped, whole
  transactions only. Data already checkpointed into the database file does not depend
  on the WAL at all.

So a torn WAL must give: every checkpointed message intact, then a *prefix* of the
later commits (never a gap, never half a transaction), a structurally valid
transcript (Threadline's recovery may add a truncated answer and cancelled tool
results), a session that takes new prompts, and at least as much data for a longer
WAL. A torn database file must give a clear ``StoreError`` message and leave the file
as it was, never a silent empty store.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.figures import record
from tests.reliability.invariants import structural_problems, text_of
from tests.reliability.peer import Peer, RpcError, ServerClosed
from tests.reliability.walfile import read_layout
from tests.reliability.zygote import Zygote
from tests.support import RawSidecar, SidecarClient, start_sidecar

ECHO = "scripted:echo"
FILES = ("threadline.db", "threadline.db-wal", "threadline.db-shm")


async def history(client: SidecarClient | Peer, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


async def build_store(home: Path) -> tuple[str, str, list[Any], dict[str, list[Any]]]:
    """Three turns checkpointed by a clean exit, then more turns (and a new session)
    only in the WAL when the sidecar is SIGKILLed."""
    client = await start_sidecar(home)
    s1 = await client.new_session(model=ECHO)
    for i in range(3):
        await client.prompt(s1, f"checkpointed turn {i}")
    checkpointed = await history(client, s1)
    await client.stop()
    wal = home / "threadline.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0, "a clean exit checkpoints the WAL"

    client = await start_sidecar(home)
    for i in range(4):
        await client.prompt(s1, f"wal only turn {i} " + "words " * 50)
    s2 = await client.new_session(model=ECHO)
    for i in range(3):
        await client.prompt(s2, f"second session turn {i}")
    later = {s1: await history(client, s1), s2: await history(client, s2)}
    assert client._server is not None
    os.kill(client._server.pid, signal.SIGKILL)
    await client.stop()
    return s1, s2, checkpointed, later


def recovered_prefix(stored: list[Any], expected: list[Any]) -> int:
    """How many messages of ``expected`` lead ``stored``; what follows them must be
    what crash recovery adds (a truncated answer, cancelled tool results)."""
    k = 0
    while k < min(len(stored), len(expected)) and stored[k] == expected[k]:
        k += 1
    for m in stored[k:]:
        original = expected[k] if k < len(expected) else None
        is_cut_answer = m["role"] == "assistant" and m.get("truncated") is True
        is_cancel = m["role"] == "tool" and all(
            b.get("status") == "cancelled" for b in m["content"]
        )
        assert is_cut_answer or is_cancel, f"message after the recovered prefix: {m}"
        if is_cut_answer and original is not None and original["messageId"] == m["messageId"]:
            assert text_of(original).startswith(text_of(m)), "recovered text is not a prefix"
    return k


async def start_on(zygote: Zygote, home: Path, log: Path) -> Peer | None:
    """A sidecar on ``home``; None when it refused to start (its reason is in ``log``)."""
    _pid, peer = await zygote.peer(home, log)
    try:
        await peer.call("initialize", {"protocolVersion": 1}, timeout=20)
    except ServerClosed:
        await peer.close()
        return None
    return peer


def torn_copy(pristine: Path, target: Path, wal_bytes: int | None, keep_shm: bool = True) -> None:
    target.mkdir(mode=0o700)
    for name in FILES:
        if (pristine / name).exists() and (keep_shm or not name.endswith("-shm")):
            shutil.copy2(pristine / name, target / name)
    if wal_bytes is not None:
        os.truncate(target / "threadline.db-wal", wal_bytes)


@pytest.mark.timeout(180)
async def test_truncated_wal_keeps_checkpointed_data_and_a_prefix_of_the_rest(
    tmp_path: Path, zygote: Zygote
) -> None:
    s1, s2, checkpointed, later = await build_store(tmp_path / "built")
    pristine = tmp_path / "built"
    layout = read_layout(pristine / "threadline.db-wal")
    assert layout.frames > 10 and len(layout.commit_ends) > 5, layout

    cuts = {0, 7, 31, 32, 33, layout.size - 1, layout.size}
    step = max(1, len(layout.commit_ends) // 8)
    for end in layout.commit_ends[::step]:
        cuts |= {end - layout.frame_size // 2, end - 1, end, end + 1}
    cuts = {c for c in cuts if 0 <= c <= layout.size}

    outcomes: list[tuple[int, int, int]] = []
    refused = 0
    for i, cut in enumerate(sorted(cuts)):
        home = tmp_path / f"cut-{i}"
        torn_copy(pristine, home, cut, keep_shm=i % 2 == 0)
        log = tmp_path / f"cut-{i}.log"
        peer = await start_on(zygote, home, log)
        if peer is None:
            refused += 1
            assert "cannot open the session store" in log.read_text(), log.read_text()[-2000:]
            continue
        try:
            stored = await history(peer, s1)
            assert stored[: len(checkpointed)] == checkpointed, f"cut {cut}: checkpointed data lost"
            assert structural_problems(stored) == [], f"cut {cut}"
            k1 = recovered_prefix(stored, later[s1])
            try:
                stored2 = await history(peer, s2)
            except RpcError as exc:
                assert exc.code == -32002, exc
                stored2 = []
            assert structural_problems(stored2) == [], f"cut {cut}"
            k2 = recovered_prefix(stored2, later[s2])
            if cut == layout.size:
                assert (k1, k2) == (len(later[s1]), len(later[s2])), "the whole WAL was not used"
            result = await peer.call(
                "session/prompt",
                {"sessionId": s1, "prompt": [{"type": "text", "text": "after the tear"}]},
            )
            assert result["stopReason"] == "end_turn"
            outcomes.append((cut, k1, k2))
        finally:
            await peer.close()
    kept = [k1 + k2 for _, k1, k2 in sorted(outcomes)]
    assert kept == sorted(kept), f"a longer WAL kept less: {sorted(outcomes)}"
    record(
        "torn_wal",
        wal_bytes=layout.size,
        wal_frames=layout.frames,
        wal_commits=len(layout.commit_ends),
        cuts=len(cuts),
        refused_to_start=refused,
        messages_after_checkpoint=len(later[s1]) - len(checkpointed) + len(later[s2]),
        kept_by_cut=[(c, k1 - len(checkpointed) + k2) for c, k1, k2 in sorted(outcomes)],
    )


async def test_a_damaged_wal_frame_hides_later_commits_but_nothing_before(
    tmp_path: Path, zygote: Zygote
) -> None:
    """A flipped byte mid-WAL (not just a cut tail): the checksum chain breaks there,
    so SQLite keeps the commits before it; the transcript stays a valid prefix."""
    s1, _s2, checkpointed, later = await build_store(tmp_path / "built")
    layout = read_layout(tmp_path / "built" / "threadline.db-wal")
    home = tmp_path / "flipped"
    torn_copy(tmp_path / "built", home, None)
    middle = layout.frame_start(layout.frames // 2) + 24 + layout.page_size // 2
    with open(home / "threadline.db-wal", "r+b") as f:
        f.seek(middle)
        byte = f.read(1)
        f.seek(middle)
        f.write(bytes([byte[0] ^ 0xFF]))
    peer = await start_on(zygote, home, tmp_path / "flipped.log")
    assert peer is not None, (tmp_path / "flipped.log").read_text()[-2000:]
    try:
        stored = await history(peer, s1)
        assert stored[: len(checkpointed)] == checkpointed
        assert structural_problems(stored) == []
        kept = recovered_prefix(stored, later[s1])
        assert kept < len(later[s1]), "commits after the damaged frame cannot have survived"
    finally:
        await peer.close()


async def test_truncated_database_file_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    home = tmp_path / "home"
    client = await start_sidecar(home)
    sid = await client.new_session(model=ECHO)
    for i in range(20):
        await client.prompt(sid, f"turn {i} " + "filler " * 200)
    await client.stop()
    db = home / "threadline.db"
    os.truncate(db, db.stat().st_size // 2 + 100)  # not on a page boundary
    before = db.read_bytes()

    raw = await RawSidecar.start(home)
    try:
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        # `initialize` may be answered before the store is opened (rpc/boot.py answers
        # it ahead of the heavy imports); nothing else is, and the process then exits.
        with pytest.raises((EOFError, asyncio.IncompleteReadError)):
            for _ in range(2):
                answer = await raw.read(timeout=20)
                assert answer.get("id") == 1 and "result" in answer, answer
        code = await asyncio.wait_for(raw.proc.wait(), 10)
    finally:
        await raw.close()
    stderr = raw.stderr.decode("utf-8", "replace")
    assert code != 0
    assert "cannot open the session store" in stderr and "Move the file aside" in stderr, stderr
    assert db.read_bytes() == before, "the damaged store was modified"
