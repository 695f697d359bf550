"""Three sidecars on one home doing random things for a while (prompts, forks, deletes,
loads, history, interrupts, kills), with the store's invariants checked after every
step: nothing committed or shown is lost, every ``tool_use`` has exactly one result,
message ids are unique, each process's history is a prefix of the store's, and no
request answers -32603. Prompts sent while a session works (steer, queue, from any of
the three) are stored once at most, every one whose request says it ran is in the
history, and queued prompts from one window run in the order they were sent."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support import SidecarClient, scripted, start_sidecar
from threadline.engine.transcript import Transcript
from threadline.store.factory import open_store

SECONDS = float(os.environ.get("THREADLINE_RANDOM_SECONDS", "60"))
ALLOWED = {-32010, -32002}
"""Busy elsewhere and deleted elsewhere are answers a user can meet; nothing else is."""

pytestmark = pytest.mark.timeout(int(SECONDS) + 240)

WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def model(words: int) -> str:
    answer: list[dict[str, Any]] = []
    for i in range(words):
        answer += [{"text": f"t{i} "}, {"sleep": 0.02}]
    call = {"tool_call": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    return scripted([call, *answer[:6]], answer)


class Fleet:
    def __init__(self, home: Path, rng: random.Random) -> None:
        self.home = home
        self.rng = rng
        self.clients: list[SidecarClient | None] = [None, None, None]
        self.retired: list[SidecarClient] = []
        self.sessions: list[str] = []
        self.deleted: set[str] = set()
        self.tasks: list[asyncio.Task[Any]] = []
        self.unexpected: list[str] = []
        self.steps: dict[str, int] = {}
        self.sent: list[Sent] = []
        """Prompts sent to steer or queue, with how their request answered."""
        self.replays: list[tuple[SidecarClient, str, int, int]] = []
        """Updates a ``session/load`` replayed (stored text, sent again): not live."""

    async def start(self, i: int) -> SidecarClient:
        client = await start_sidecar(self.home)

        async def weather(params: dict[str, Any]) -> dict[str, Any]:
            await asyncio.sleep(self.rng.uniform(0, 0.2))
            return {"content": [{"type": "text", "text": "Cold"}]}

        client.on_request("tool/call", weather)
        self.clients[i] = client
        return client

    def live(self) -> list[SidecarClient]:
        return [c for c in self.clients if c is not None]

    async def guarded(self, coro: Any) -> Any:
        try:
            return await coro
        except JsonRpcException as exc:
            if exc.code not in ALLOWED:
                self.unexpected.append(f"{exc.code}: {exc}")
        except (ConnectionError, asyncio.CancelledError, RuntimeError, TimeoutError):
            return None  # the process was killed under the request
        return None

    async def step(self) -> None:
        rng = self.rng
        op = rng.choice(
            [
                "new",
                "prompt",
                "prompt",
                "prompt",
                "fork",
                "delete",
                "load",
                "history",
                "interrupt",
                "cancel",
                "kill",
                "steer",
                "queue",
                "queue",
                "resume",
            ]
        )
        self.steps[op] = self.steps.get(op, 0) + 1
        client = rng.choice(self.live())
        sid = rng.choice(self.sessions) if self.sessions else None
        if op == "new" or sid is None:
            new = await self.guarded(
                client.new_session(
                    model=model(rng.randint(5, 40)), builtinTools=False, tools=[WEATHER]
                )
            )
            if new:
                self.sessions.append(new)
        elif op == "prompt":
            self.tasks.append(asyncio.create_task(self.guarded(client.prompt(sid, "go", 90))))
        elif op == "fork":
            forked = await self.guarded(client.call("session/fork", {"sessionId": sid}))
            if forked:
                self.sessions.append(forked["sessionId"])
        elif op == "delete":
            if await self.guarded(client.call("session/delete", {"sessionId": sid})) is not None:
                self.deleted.add(sid)
        elif op == "load":
            start = len(client.updates)
            await self.guarded(
                client.call("session/load", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
            )
            self.replays.append((client, sid, start, len(client.updates)))
        elif op in ("steer", "queue"):
            sent = Sent(f"{op}-{len(self.sent)}", op, sid, id(client))
            self.sent.append(sent)
            self.tasks.append(asyncio.create_task(self.send(client, sent)))
        elif op == "resume":
            await self.guarded(client.call("session/queue/resume", {"sessionId": sid}))
        elif op == "history":
            await self.guarded(client.call("session/history", {"sessionId": sid}))
        elif op == "interrupt":
            await self.guarded(client.call("session/interrupt", {"sessionId": sid}))
        elif op == "cancel":
            client.notify("session/cancel", {"sessionId": sid})
        elif op == "kill" and rng.random() < 0.3:
            i = self.clients.index(client)
            assert client._server is not None
            os.kill(client._server.pid, signal.SIGKILL)
            await client._server.wait()
            self.retired.append(client)
            await self.start(i)

    async def send(self, client: SidecarClient, sent: Sent) -> None:
        params = {
            "sessionId": sent.sid,
            "prompt": [{"type": "text", "text": sent.text}],
            "_meta": {"threadline": {"whileRunning": sent.mode}},
        }
        answer = await self.guarded(client.call("session/prompt", params, 90))
        if answer is not None:
            meta = (answer.get("_meta") or {}).get("threadline") or {}
            sent.ran = "queue" not in meta

    async def check(self) -> None:
        """Each live process's history of a session is a prefix of the store's."""
        sid = self.rng.choice(self.sessions) if self.sessions else None
        if sid is None:
            return
        client = self.rng.choice(self.live())
        seen = await self.guarded(client.call("session/history", {"sessionId": sid}))
        stored = store_history(self.home, sid)
        if seen is None or stored is None:
            return
        ids = [m["messageId"] for m in seen["messages"]]
        assert len(ids) == len(set(ids)), "message ids unique"
        assert ids == [m["messageId"] for m in stored][: len(ids)], "history is the store's"


@dataclass
class Sent:
    text: str
    mode: str
    sid: str
    window: int
    ran: bool = False
    """Its request answered with the turn it was part of (not removed, held or lost)."""


def check_sent(home: Path, sent: list[Sent], deleted: set[str]) -> None:
    """Nothing sent while a session worked is lost or run twice, and a window's queued
    prompts run in the order it sent them."""
    users: dict[str, list[str]] = {}
    for sid in {s.sid for s in sent}:
        msgs = store_history(home, sid)
        users[sid] = (
            []
            if msgs is None
            else [
                "".join(b.get("text", "") for b in m["content"] if b["type"] == "text")
                for m in msgs
                if m["role"] == "user"
            ]
        )
    for s in sent:
        if s.sid in deleted or store_history(home, s.sid) is None:
            continue
        count = users[s.sid].count(s.text)
        assert count <= 1, f"{s.text} ran {count} times"
        assert count == 1 or not s.ran, f"{s.text} answered as run but is not stored"
    for sid, texts in users.items():
        for window in {s.window for s in sent}:
            mine = [
                s.text for s in sent if s.sid == sid and s.window == window and s.mode == "queue"
            ]
            stored = [t for t in texts if t in mine]
            assert stored == [t for t in mine if t in stored], f"queue order in {sid}: {stored}"


def store_history(home: Path, sid: str) -> list[dict[str, Any]] | None:
    store = open_store(home / "threadline.db", os.environ.get("THREADLINE_STORE"))
    try:
        if store.get_session(sid) is None:
            return None
        events = store.load_events(sid)
    finally:
        store.close()
    return Transcript.from_events((e.kind, e.payload) for e in events).history()


def shown_chunks(
    clients: list[SidecarClient], replays: list[tuple[SidecarClient, str, int, int]]
) -> list[tuple[str, list[str]]]:
    """The chunks each client saw live, in order, by assistant message id (its own
    stream or a watched one). Updates that arrive while that client's ``session/load``
    of the session is answered are left out (the replay sends stored text again), and
    with them any live chunk a running watcher sent meanwhile: so a client's chunks are
    checked as an ordered subsequence of the stored text, not as its whole prefix."""
    out: list[tuple[str, list[str]]] = []
    for c in clients:
        per: dict[str, list[str]] = {}
        for n, u in enumerate(c.updates):
            if any(r[0] is c and r[1] == u["sessionId"] and r[2] <= n < r[3] for r in replays):
                continue
            up = u["update"]
            if up["sessionUpdate"] == "agent_message_chunk" and up.get("messageId"):
                per.setdefault(up["messageId"], []).append(up["content"]["text"])
        out += per.items()
    return out


def in_order(chunks: list[str], stored: str) -> bool:
    """Every chunk is in ``stored``, each after the one before: nothing shown is lost."""
    at = 0
    for chunk in chunks:
        found = stored.find(chunk, at)
        if found < 0:
            return False
        at = found + len(chunk)
    return True


async def test_three_sidecars_at_random_lose_nothing(
    home: Path, store_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if store_url is not None:
        monkeypatch.setenv("THREADLINE_STORE", store_url)
    seed = int(os.environ.get("THREADLINE_RANDOM_SEED", str(time.time_ns() % 100_000)))
    print(f"seed {seed}")
    fleet = Fleet(home, random.Random(seed))
    for i in range(3):
        await fleet.start(i)
    try:
        deadline = time.monotonic() + SECONDS
        while time.monotonic() < deadline:
            await fleet.step()
            await fleet.check()
            await asyncio.sleep(fleet.rng.uniform(0, 0.1))
            assert not fleet.unexpected, fleet.unexpected
        # Let every turn end, then open each session once more in a fresh process, so
        # whatever a killed process left is recovered.
        await asyncio.wait_for(asyncio.gather(*fleet.tasks), 120)
        everyone = fleet.live() + fleet.retired
        shown = shown_chunks(everyone, fleet.replays)
        last = await fleet.start(0)
        for sid in fleet.sessions:
            await fleet.guarded(last.call("session/history", {"sessionId": sid}))
        assert not fleet.unexpected, fleet.unexpected
        committed: dict[str, str] = {}
        for sid in fleet.sessions:
            msgs = store_history(home, sid)
            if msgs is None:
                continue
            ids = [m["messageId"] for m in msgs]
            assert len(ids) == len(set(ids)), f"duplicate message ids in {sid}"
            uses = [b["id"] for m in msgs for b in m["content"] if b["type"] == "tool_use"]
            results = [
                b["toolUseId"] for m in msgs for b in m["content"] if b["type"] == "tool_result"
            ]
            assert sorted(uses) == sorted(results), f"one result per tool_use in {sid}"
            for m in msgs:
                if m["role"] == "assistant":
                    committed[m["messageId"]] = "".join(
                        b["text"] for b in m["content"] if b["type"] == "text"
                    )
        lost = [
            (mid, chunks)
            for mid, chunks in shown
            if mid in committed and not in_order(chunks, committed[mid])
        ]
        assert not lost, [("".join(c), committed[m]) for m, c in lost[:3]]
        check_sent(home, fleet.sent, fleet.deleted)
        print(f"steps {fleet.steps}, sessions {len(fleet.sessions)}, checked {len(shown)} streams")
        assert sum(fleet.steps.values()) > 50
    finally:
        for t in fleet.tasks:
            t.cancel()
        for c in fleet.live() + fleet.retired:
            await c.stop()
