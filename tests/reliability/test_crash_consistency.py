"""Crash consistency: SIGKILL at random points, restart, and nothing announced is lost.

One data folder lives through hundreds of sidecar lives. Each life: start (a fork of a
pre-imported sidecar, see ``zygote.py``), check the sessions touched before the last
kill against what the client was told (every streamed text, tool call, compaction
summary, title and turn is stored; every ``tool_use`` has one result; every answer
is finished or truncated), check a session still takes a prompt, then start a random
action (a streaming answer, a client tool run, a permission wait, a fork of a running
turn, a compaction, a burst of store writes across sessions) and SIGKILL the sidecar
at a random moment of it. The client reads everything the dead server wrote before
filing it in the ledger, so "what the client saw" is exact.

At the end a real ``threadline serve`` process checks every session once more.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.reliability.figures import record
from tests.reliability.invariants import Ledger, ledger_problems, structural_problems
from tests.reliability.peer import Peer, RpcError, ServerClosed
from tests.reliability.wire import pid_alive
from tests.reliability.zygote import Zygote
from tests.support import SidecarClient, scripted, start_sidecar

BUDGET_SECONDS = float(os.environ.get("THREADLINE_CRASH_SECONDS", "70"))
MAX_KILLS = int(os.environ.get("THREADLINE_CRASH_KILLS", "400"))

TOOL = {
    "name": "slow_tool",
    "description": "answered by the client after a while",
    "inputSchema": {"type": "object"},
    "timeout": 30,
}
GUARDED = {**TOOL, "name": "guarded_tool", "needsApproval": True, "parallelizable": False}


def stream_steps(words: int, pause: float) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for i in range(words):
        steps += [{"text": f"w{i} "}, {"sleep": pause}]
    return steps


QUICK = scripted([{"text": "quick answer"}])
STREAM = scripted(stream_steps(40, 0.004))
COMPACTING = "scripted:" + (
    '{"rounds": [[{"text": "ok"}]], "summary": [{"text": "Summary "}, {"sleep": 0.03}, '
    '{"text": "of earlier turns."}, {"sleep": 0.03}]}'
)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A tool call without an id: the scripted provider numbers them from 1 in every
    process, so the engine must give repeats fresh ids (ids are unique for ever)."""
    return {"tool_call": {"name": name, "arguments": arguments}}


TOOLS = scripted(
    [{"text": "calling tools "}, call("slow_tool", n=1), call("slow_tool", n=2)],
    [{"text": "using the results "}, *stream_steps(10, 0.004)],
)
PERMISSION = scripted(
    [{"text": "need approval "}, call("guarded_tool")],
    [{"text": "approved path "}, *stream_steps(5, 0.004)],
)


class CrashRun:
    """One data folder, many sidecar lives, and the ledger of what the client saw."""

    def __init__(self, root: Path, zygote: Zygote, rng: random.Random) -> None:
        self.home = root / "home"
        self.logs = root / "stderr"
        self.logs.mkdir(parents=True)
        self.zygote = zygote
        self.rng = rng
        self.ledger = Ledger()
        self.touched: set[str] = set()
        self.kills = 0
        self.lives = 0
        self.checks = 0
        self.by_action: dict[str, int] = {}
        self.peer: Peer | None = None
        self.pid = 0
        self.truncated: set[str] = set()
        self.cancelled_calls: set[tuple[str, str]] = set()
        """(session, tool call id): ids are unique within a session's history."""
        self.mid_turn_kills = 0
        self.deleted: set[str] = set()
        self.maybe_deleted: set[str] = set()
        """Deletes answered, and deletes sent but cut off by a kill (either outcome is
        right for those; the next check finds out which and files it)."""

    def live_sessions(self) -> list[str]:
        gone = self.deleted | self.maybe_deleted
        return [sid for sid in self.ledger.sessions if sid not in gone]

    # -- lives -------------------------------------------------------------------------

    async def start(self) -> Peer:
        self.lives += 1
        self.pid, peer = await self.zygote.peer(self.home, self.logs / f"life-{self.lives}.log")
        self.peer = peer
        peer.handlers["tool/call"] = self._tool_call
        peer.handlers["session/request_permission"] = self._permission
        caps = {"session": {"compaction": {}}}
        await peer.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        return peer

    async def kill(self) -> None:
        """SIGKILL, then read what the server wrote before it died, then file it."""
        peer = self.peer
        assert peer is not None
        os.kill(self.pid, signal.SIGKILL)
        await peer.wait_closed(10)
        for _ in range(100):
            if not pid_alive(self.pid):
                break
            await asyncio.sleep(0.01)
        self.ledger.file_updates(peer.updates)
        await peer.close()
        self.peer = None
        self.kills += 1

    async def _tool_call(self, params: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(self.rng.uniform(0, 0.15))
        return {"content": [{"type": "text", "text": f"result {params['arguments']}"}]}

    async def _permission(self, params: dict[str, Any]) -> dict[str, Any]:
        delay = self.rng.choice([0.02, 0.1, 3600.0])  # sometimes never answered
        await asyncio.sleep(delay)
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    # -- checks ------------------------------------------------------------------------

    async def check(self, peer: Peer, sid: str) -> None:
        entry = self.ledger.sessions[sid]
        try:
            history = await peer.call("session/history", {"sessionId": sid})
        except RpcError as exc:
            gone = sid in self.deleted or sid in self.maybe_deleted
            assert gone and exc.code == -32002, f"{sid} after kill {self.kills}: {exc}"
            self.maybe_deleted.discard(sid)
            self.deleted.add(sid)
            return
        assert sid not in self.deleted, f"deleted session {sid} came back"
        self.maybe_deleted.discard(sid)  # the delete never committed
        messages = history["messages"]
        problems = structural_problems(messages) + ledger_problems(entry, messages)
        assert not problems, f"session {sid} after kill {self.kills}: {problems}"
        self.checks += 1
        for m in messages:
            if m.get("truncated"):
                self.truncated.add(m["messageId"])
            for b in m["content"]:
                if b.get("type") == "tool_result" and b.get("status") == "cancelled":
                    self.cancelled_calls.add((sid, b["toolUseId"]))

    async def check_titles(self, peer: Peer) -> None:
        titles: dict[str, str | None] = {}
        cursor: str | None = None
        while True:
            page = await peer.call("session/list", {"cursor": cursor} if cursor else {})
            titles.update({s["sessionId"]: s.get("title") for s in page["sessions"]})
            cursor = page.get("nextCursor")
            if not cursor:
                break
        for sid in self.live_sessions():
            entry = self.ledger.sessions[sid]
            assert sid in titles, f"session {sid} is not listed after kill {self.kills}"
            if entry.title is not None:
                assert titles[sid] == entry.title, f"title of {sid} was announced, not stored"

    async def takes_a_prompt(self, peer: Peer, sid: str) -> None:
        await self.call_when_free(
            peer,
            "session/set_config_option",
            {"sessionId": sid, "configId": "model", "value": QUICK},
        )
        self.touched.add(sid)
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": "still there?"}]}
        result = await self.call_when_free(peer, "session/prompt", params)
        self.ledger.file_result(sid, result)
        assert result["stopReason"] == "end_turn", result

    async def call_when_free(self, peer: Peer, method: str, params: dict[str, Any]) -> Any:
        """A request that another live sidecar may briefly hold off with -32010 (on
        PostgreSQL a reading sidecar repairs what the killed one left): asked again,
        as a user would, for a bounded time."""
        for _ in range(100):
            try:
                return await peer.call(method, params, timeout=60)
            except RpcError as exc:
                if exc.code != -32010:
                    raise
                await asyncio.sleep(0.05)
        return await peer.call(method, params, timeout=60)

    # -- actions -----------------------------------------------------------------------

    async def new_session(self, peer: Peer, model: str, parent: str | None = None) -> str:
        tools = [TOOL, GUARDED]
        params = {
            "cwd": str(self.home.parent),
            "mcpServers": [],
            "_meta": {"threadline": {"model": model, "tools": tools, "builtinTools": False}},
        }
        sid = (await peer.call("session/new", params))["sessionId"]
        self.ledger.session(sid, parent)
        self.touched.add(sid)
        return sid

    async def prompt(self, peer: Peer, sid: str, text: str) -> dict[str, Any] | None:
        self.touched.add(sid)
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
        try:
            result = await peer.call("session/prompt", params, timeout=60)
        except (RpcError, ServerClosed):
            return None
        self.ledger.file_result(sid, result)
        return result

    async def use(self, peer: Peer, model: str) -> str:
        """A session to act on: an existing one (set to ``model``) or a new one."""
        known = self.live_sessions()
        if known and self.rng.random() < 0.7:
            sid = self.rng.choice(known)
            await self.call_when_free(
                peer,
                "session/set_config_option",
                {"sessionId": sid, "configId": "model", "value": model},
            )
            return sid
        return await self.new_session(peer, model)

    async def act_stream(self, peer: Peer) -> Awaitable[Any]:
        sid = await self.use(peer, STREAM)
        return self.prompt(peer, sid, "stream please")

    async def act_tools(self, peer: Peer) -> Awaitable[Any]:
        sid = await self.use(peer, TOOLS)
        return self.prompt(peer, sid, "use the tools")

    async def act_permission(self, peer: Peer) -> Awaitable[Any]:
        sid = await self.use(peer, PERMISSION)
        return self.prompt(peer, sid, "ask first")

    async def act_fork(self, peer: Peer) -> Awaitable[Any]:
        sid = await self.use(peer, self.rng.choice([STREAM, TOOLS]))
        turn = asyncio.ensure_future(self.prompt(peer, sid, "fork me"))

        async def fork_later() -> None:
            await asyncio.sleep(self.rng.uniform(0, 0.15))
            with contextlib.suppress(RpcError, ServerClosed):
                child = await peer.call("session/fork", {"sessionId": sid})
                self.ledger.session(child["sessionId"], sid)
                self.touched.add(child["sessionId"])
            await turn

        return fork_later()

    async def act_compact(self, peer: Peer) -> Awaitable[Any]:
        sid = await self.use(peer, COMPACTING)
        for i in range(2):
            await self.prompt(peer, sid, f"turn {i} before compaction")

        async def compact() -> None:
            with contextlib.suppress(RpcError, ServerClosed):
                await peer.call("session/compact", {"sessionId": sid, "keepTurns": 1})

        return compact()

    async def act_burst(self, peer: Peer) -> Awaitable[Any]:
        """Many small commits at once: new sessions, prompts, forks, deletes."""
        sids = [await self.use(peer, QUICK) for _ in range(3)]
        jobs: list[Awaitable[Any]] = [self.prompt(peer, s, "burst") for s in sids]
        jobs.append(self.new_session(peer, QUICK))

        async def fork_one() -> None:
            with contextlib.suppress(RpcError, ServerClosed):
                child = await peer.call("session/fork", {"sessionId": sids[0]})
                self.ledger.session(child["sessionId"], sids[0])

        jobs.append(fork_one())
        others = [s for s in self.live_sessions() if s not in sids]
        if others and self.rng.random() < 0.5:
            jobs.append(self.delete(peer, self.rng.choice(others)))

        async def all_jobs() -> None:
            await asyncio.gather(*jobs, return_exceptions=True)

        return all_jobs()

    async def delete(self, peer: Peer, sid: str) -> None:
        """Delete a session (often a fork's parent: the fork must keep its prefix)."""
        self.maybe_deleted.add(sid)
        self.touched.add(sid)
        self.touched |= {c for c, e in self.ledger.sessions.items() if e.parent == sid}
        with contextlib.suppress(RpcError, ServerClosed):
            await peer.call("session/delete", {"sessionId": sid})
            self.maybe_deleted.discard(sid)
            self.deleted.add(sid)

    async def one_life(self) -> None:
        peer = await self.start()
        for sid in sorted(self.touched):
            await self.check(peer, sid)
        if self.lives % 20 == 1:
            await self.check_titles(peer)
        alive = sorted(self.touched & set(self.live_sessions()))
        if alive:
            await self.takes_a_prompt(peer, self.rng.choice(alive))
        self.touched = set()
        name = self.rng.choice(list(ACTIONS))
        action, window = ACTIONS[name]
        self.by_action[name] = self.by_action.get(name, 0) + 1
        job = asyncio.ensure_future(await action(self, peer))
        await asyncio.sleep(self.rng.uniform(0, window))
        if not job.done():
            self.mid_turn_kills += 1
        await self.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(job, 5)
        # Sessions the action may have written to are checked in the next life.
        self.touched |= {
            p["sessionId"] for p in peer.updates if p["sessionId"] in self.ledger.sessions
        }


ACTIONS: dict[str, tuple[Callable[[CrashRun, Peer], Awaitable[Awaitable[Any]]], float]] = {
    "stream": (CrashRun.act_stream, 0.3),
    "tools": (CrashRun.act_tools, 0.35),
    "permission": (CrashRun.act_permission, 0.25),
    "fork": (CrashRun.act_fork, 0.3),
    "compact": (CrashRun.act_compact, 0.12),
    "burst": (CrashRun.act_burst, 0.08),
}
"""Each action, and the window in which its kill point is drawn (seconds)."""


async def bystanders_read(run: CrashRun, readers: list[SidecarClient], problems: list[str]) -> None:
    """Two more sidecars on the store, alive through every kill, reading histories and
    pages while the killed one works: a live reader must never see a broken history,
    nor be answered anything but found, busy elsewhere or deleted."""
    while True:
        await asyncio.sleep(run.rng.uniform(0.01, 0.1))
        sessions = run.live_sessions()
        if not sessions:
            continue
        reader = run.rng.choice(readers)
        try:
            if run.rng.random() < 0.1:
                await reader.call("session/list", {})
                continue
            sid = run.rng.choice(sessions)
            history = await reader.call("session/history", {"sessionId": sid})
        except JsonRpcException as exc:
            if exc.code not in (-32002, -32010):
                problems.append(f"bystander: {exc.code} {exc}")
            continue
        # Calls of a turn running in the killed sidecar's life are open until it ends.
        found = [
            p
            for p in structural_problems(history["messages"])
            if not p.startswith("tool_use without a result")
        ]
        if found:
            problems.append(f"bystander history of {sid}: {found}")


@pytest.mark.timeout(300)
async def test_sigkill_at_random_points_loses_nothing_announced(
    tmp_path: Path, zygote: Zygote, store_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite one sidecar lives and dies on the home; on PostgreSQL two more sidecars
    share the database and read throughout (three sidecars, one of them killed)."""
    seed = int(os.environ.get("THREADLINE_CRASH_SEED", str(int(time.time()))))
    run = CrashRun(tmp_path, zygote, random.Random(seed))
    readers: list[SidecarClient] = []
    reader_problems: list[str] = []
    reading: asyncio.Task[None] | None = None
    if store_url is not None:
        monkeypatch.setenv("THREADLINE_STORE", store_url)
        readers = [await start_sidecar(tmp_path / f"reader-{i}") for i in range(2)]
        reading = asyncio.create_task(bystanders_read(run, readers, reader_problems))
    started = time.monotonic()
    try:
        while time.monotonic() - started < BUDGET_SECONDS and run.kills < MAX_KILLS:
            try:
                await run.one_life()
            except AssertionError as exc:
                raise AssertionError(f"seed {seed}: {exc}") from exc
            assert not reader_problems, f"seed {seed}: {reader_problems[:3]}"
    finally:
        if reading is not None:
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
        for reader in readers:
            await reader.stop()
    looped = time.monotonic() - started

    # The last word goes to a real `threadline serve`, not a fork of one.
    client = await start_sidecar(run.home)
    try:
        for sid in run.deleted:
            with pytest.raises(JsonRpcException):
                await client.call("session/history", {"sessionId": sid})
        for sid in run.live_sessions():
            entry = run.ledger.sessions[sid]
            history = (await client.call("session/history", {"sessionId": sid}))["messages"]
            problems = structural_problems(history) + ledger_problems(entry, history)
            assert not problems, f"seed {seed}: final check of {sid}: {problems}"
        sid = run.live_sessions()[0]
        await client.call(
            "session/set_config_option", {"sessionId": sid, "configId": "model", "value": QUICK}
        )
        assert (await client.prompt(sid, "after all the kills"))["stopReason"] == "end_turn"
    finally:
        await client.stop()
    db = run.home / "threadline.db"
    record(
        "crash_consistency" if store_url is None else "crash_consistency_postgresql",
        seed=seed,
        kill_points=run.kills,
        sessions=len(run.ledger.sessions),
        deleted=len(run.deleted),
        session_checks=run.checks,
        kills_while_an_action_ran=run.mid_turn_kills,
        truncated_answers_seen=len(run.truncated),
        cancelled_tool_calls_seen=len(run.cancelled_calls),
        by_action=run.by_action,
        seconds=round(looped, 1),
        db_bytes=db.stat().st_size if store_url is None else None,
    )
    assert run.kills >= 100, f"only {run.kills} kill points ran in {looped:.0f} s"
    assert run.truncated and run.cancelled_calls, "no kill ever landed mid-answer or mid-tool"


def test_the_ledger_notices_a_lost_announcement() -> None:
    """The checks must be able to fail: a streamed text, a tool call or a turn that
    the history does not have is reported."""
    ledger = Ledger()
    entry = ledger.session("s")
    ledger.file_updates(
        [
            {
                "sessionId": "s",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": "m1",
                    "content": {"type": "text", "text": "hello"},
                    "_meta": {"threadline": {"turnId": "a1"}},
                },
            },
            {"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "c1"}},
        ]
    )
    user = {"messageId": "u", "turnId": "u1", "role": "user", "content": []}
    cut = {
        "messageId": "m1",
        "turnId": "a1",
        "role": "assistant",
        "content": [{"type": "text", "text": "hel"}],
        "truncated": True,
    }
    problems = ledger_problems(entry, [user, cut])
    assert any("does not start with" in p for p in problems)
    assert any("tool calls not stored" in p for p in problems)
    assert ledger_problems(entry, []) and structural_problems([{**cut, "truncated": None}])
