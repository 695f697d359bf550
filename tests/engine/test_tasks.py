"""The task lifecycle in process: a turn, a compaction, a repair and the commands,
each started, run and stopped the one way tasks are (`RunningTask.cancel`), against
the fake host (turn, compaction) or live sessions on a real SQLite store (repair,
one task at a time, leases)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.engine.fakes import EchoTool, FakeHost, scripted, started, text_prompt, turn, when
from tests.tools.fakes import FakeEditor
from threadline.engine import events
from threadline.engine.blocks import bare_call_block, message, text, user_message
from threadline.engine.commands import CompactCommand, ForkCommand, prompt_task
from threadline.engine.compactor import Compaction
from threadline.engine.config import SessionConfig
from threadline.engine.errors import SessionBusy
from threadline.engine.forking import fork_with_base
from threadline.engine.live import LiveSessions
from threadline.engine.mutations import (
    AssistantMessage,
    AssistantTruncated,
    ToolCancelled,
    UserMessage,
)
from threadline.engine.outcomes import CompactionOutcome, TurnOutcome
from threadline.engine.session import Session
from threadline.engine.tasks import RunningTask, Work
from threadline.engine.turn import Turn
from threadline.providers.registry import ProviderRegistry
from threadline.store.base import Owner, StoreError
from threadline.store.owners import current_owner
from threadline.store.sqlite import EventStore

pytestmark = pytest.mark.timeout(30)


# -- turn -------------------------------------------------------------------------------


async def test_a_turn_stopped_while_a_tool_runs_answers_every_call_cancelled() -> None:
    slow = EchoTool()

    async def hang(arguments: dict[str, Any], ctx: Any) -> Any:
        await anyio.sleep_forever()

    slow.run = hang  # type: ignore[method-assign]
    provider = scripted(
        [
            {"text": "Calling."},
            {"tool_call": {"name": "echo", "arguments": {"text": "a"}}},
            {"tool_call": {"name": "echo", "arguments": {"text": "b"}}},
        ]
    )
    host = FakeHost(provider, tools=[slow])
    running, [outcome] = await started(
        turn(host, "go"), when(host, lambda e: isinstance(e, events.ToolProgress))
    )

    assert isinstance(outcome, TurnOutcome) and outcome.stop_reason == "cancelled"
    assert host.kinds() == ["user_message", "assistant_message", "tool_cancelled", "tool_cancelled"]
    calls = [b["id"] for b in host.committed[1].message["content"] if b["type"] == "tool_use"]
    cancelled = [m for m in host.committed if isinstance(m, ToolCancelled)]
    assert [m.message["content"][0]["toolUseId"] for m in cancelled] == calls
    assert {m.message["content"][0]["content"][0]["text"] for m in cancelled} == {
        "Tool call cancelled: cancelled by the user."
    }
    assert host.transcript.open_calls == {}
    finished = [e.block for e in host.events if isinstance(e, events.ToolFinished)]
    assert finished == [m.message["content"][0] for m in cancelled]
    assert outcome.message_id == host.committed[1].message["messageId"]
    assert running.task.turn_id == "a1"


async def test_a_turn_snapshot_is_what_an_interrupt_would_leave_under_new_ids() -> None:
    provider = scripted([{"text": "partial "}, {"hang": True}])
    host = FakeHost(provider)
    t = turn(host, "tell me")
    snapshots: list[list[Any]] = []
    shown = when(host, lambda e: isinstance(e, events.MessageChunk))

    async def fork_then_stop() -> None:
        await shown.wait()
        snapshots.append(t.snapshot())

    seen = anyio.Event()

    async def watch() -> None:
        await fork_then_stop()
        seen.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        _, [outcome] = await started(t, seen)
    [[copy]] = snapshots
    assert isinstance(copy, AssistantTruncated)
    [stored] = [m for m in host.committed if isinstance(m, AssistantTruncated)]
    assert copy.message["messageId"] != stored.message["messageId"]
    assert copy.message["content"] == stored.message["content"] == [text("partial ")]
    assert copy.message["error"] == "forked while the answer was streaming"
    assert stored.message["error"] == "cancelled by the user"
    assert outcome.stop_reason == "cancelled"


# -- compaction -------------------------------------------------------------------------


def two_turns(host: FakeHost) -> None:
    for n in (1, 2):
        host.commit([UserMessage(user_message(n, [text(f"question {n} " + "words " * 40)]))])
        answer = message("assistant", f"a{n}", [text("answer " * 40)], model="scripted:test")
        host.commit([AssistantMessage(answer)])
    host.commits.clear()


async def test_a_compaction_stopped_mid_summary_changes_nothing() -> None:
    provider = scripted([{"text": "unused"}], summary=[{"text": "Goal:"}, {"hang": True}])
    host = FakeHost(provider)
    two_turns(host)
    task = Compaction(host, None, 1)
    assert task.work is Work.COMPACT and task.snapshot() == []
    _, [outcome] = await started(
        task, when(host, lambda e: isinstance(e, events.CompactionProgress))
    )

    assert outcome == CompactionOutcome.unchanged(outcome.tokens_before, 4, "cancelled")
    assert outcome.tokens_before > 0
    assert host.commits == []
    progress = [e for e in host.events if isinstance(e, events.CompactionProgress)]
    assert [p.status for p in progress] == ["in_progress", "cancelled"]


async def test_a_compaction_that_runs_to_the_end_commits_one_summary() -> None:
    provider = scripted([{"text": "unused"}], summary=[{"text": "Goal: test."}])
    host = FakeHost(provider)
    two_turns(host)
    outcome = await RunningTask(Compaction(host, "keep it short", 1)).run()
    assert outcome.compacted and outcome.summary == "Goal: test."
    assert host.kinds() == ["context_summary"]
    assert host.committed[0].message["turnId"] == "a2"  # the session's latest turn


# -- one task at a time, leases, repair on live sessions ------------------------------------


@pytest.fixture
def live(tmp_path: Path) -> LiveSessions:
    return LiveSessions(EventStore(tmp_path / "threadline.db"), ProviderRegistry(), FakeEditor())


def new(live: LiveSessions, model: str) -> Session:
    config = SessionConfig(model=model, builtin_tools=False, auto_compact=False)
    row = live.store.create_session(f"sess_{model[-4:]}", "/tmp", config.to_json(), "now")
    return live.load(row)


async def test_a_session_runs_one_task_and_an_interrupt_stops_only_a_turn(
    live: LiveSessions,
) -> None:
    model = "scripted:" + '{"rounds": [[{"text": "x"}]], "summary": [{"hang": true}]}'
    session = new(live, model)
    for n in (1, 2):
        done = await live.run(session, Turn(session, text_prompt(f"question {n} " + "w " * 50)))
        assert isinstance(done, TurnOutcome) and done.turn_id == f"a{n}"
    compacting = anyio.Event()
    told = session.announce

    def announce(event: events.Event) -> None:
        told(event)
        if isinstance(event, events.CompactionProgress):
            compacting.set()

    session.announce = announce  # type: ignore[method-assign]
    async with anyio.create_task_group() as tg:
        tg.start_soon(live.run, session, Compaction(session, None, 1))
        await compacting.wait()
        assert session.state == "compacting"
        assert live.leases.held == {session.id}
        with pytest.raises(SessionBusy) as busy:
            await live.run(session, Turn(session, text_prompt("third")))
        assert busy.value.data == {"sessionId": session.id, "state": "compacting"}
        assert not (await live.interrupt(session)).interrupted  # not a turn
        assert session.running is not None
        session.running.cancel()  # the one way a task is stopped
    assert session.state == "idle" and live.leases.held == set()
    assert live.store.get_lease(session.id) is None


async def test_a_session_makes_its_tools_only_when_a_turn_needs_them(
    live: LiveSessions,
) -> None:
    """Opening a session to answer its history or replay makes no tools (that imports
    the tool modules: most of a fresh process's first open); its first turn does."""
    config = SessionConfig(model="scripted:echo", builtin_tools=True, auto_compact=False)
    row = live.store.create_session("sess_tools", "/tmp", config.to_json(), "now")
    session = live.load(row)
    assert not session.tools_made
    assert session.transcript.history_json() is not None
    assert not session.tools_made
    done = await live.run(session, Turn(session, text_prompt("hello")))
    assert isinstance(done, TurnOutcome)
    assert session.tools_made and "read_file" in session.tools.names()
    session.set_builtin_tools(False)
    assert "read_file" not in session.tools.names()
    await session.close_tools()


async def test_commands_are_tasks(live: LiveSessions) -> None:
    session = new(live, "scripted:echo")
    forks: list[tuple[str, str | None]] = []

    def fork(session_id: str, message_id: str | None) -> Any:
        forks.append((session_id, message_id))
        return dataclasses.make_dataclass("F", ["session_id"])("sess_child")

    compact = prompt_task(session, text_prompt("/compact be brief"), fork)
    assert isinstance(compact, CompactCommand) and compact.work is Work.COMPACT
    assert compact.compaction.instructions == "be brief"
    branch = prompt_task(session, text_prompt("/fork msg_1"), fork)
    assert isinstance(branch, ForkCommand) and branch.work is None
    assert isinstance(prompt_task(session, text_prompt("/forks"), fork), Turn)
    outcome = await live.run(session, branch)
    assert outcome.command == "fork" and forks == [(session.id, "msg_1")]
    assert session.running is None  # it ran beside the session's task, unleased
    outcome = await live.run(session, compact)
    assert outcome.command == "compact"


async def test_a_lease_that_found_no_journal_is_not_followed_by_a_look_for_one(
    live: LiveSessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Taking the lease reads whether the session has a stream journal (in the same
    statement on PostgreSQL); without one the turn asks no more: a round trip a turn
    on a server store. With one (a dead owner's), it is read and recorded (below)."""
    session = new(live, "scripted:echo")
    looked: list[str] = []
    read = live.store.inflight_stream

    def inflight_stream(session_id: str) -> Any:
        looked.append(session_id)
        return read(session_id)

    monkeypatch.setattr(live.store, "inflight_stream", inflight_stream)
    done = await live.run(session, Turn(session, text_prompt("hello")))
    assert isinstance(done, TurnOutcome) and looked == []
    dead_owners_turn(live, "sess_dead")
    dead = live.load(live.store.get_session("sess_dead"))  # type: ignore[arg-type]
    await live.run(dead, Turn(dead, text_prompt("again")))
    assert looked[:1] == ["sess_dead"]
    assert dead.transcript.messages[2]["messageId"] == "msg_cut"


def dead_owners_turn(live: LiveSessions, session_id: str) -> str:
    """What a sidecar that died mid-turn leaves: an open call, and a journaled answer."""
    store = live.store
    config = SessionConfig(model="scripted:echo", builtin_tools=False)
    store.create_session(session_id, "/tmp", config.to_json(), "now")
    calls = message("assistant", "a1", [bare_call_block("call_1", "echo", {})])
    user = user_message(1, [text("go")])
    store.append(
        session_id, [UserMessage(user).to_event(), AssistantMessage(calls).to_event()], "n"
    )
    store.begin_stream(session_id, "msg_cut", {"turnId": "a1", "model": "scripted:echo"})
    store.append_chunks(session_id, [("text", "half an answ")])
    return "msg_cut"


def repaired(live: LiveSessions, session: Session) -> None:
    kinds = [m["role"] for m in session.transcript.messages]
    assert kinds == ["user", "assistant", "assistant", "tool"]
    cut, result = session.transcript.messages[2:]
    assert cut["messageId"] == "msg_cut" and cut["truncated"] is True
    assert cut["content"] == [text("half an answ")]
    assert cut["error"] == "the sidecar stopped before the answer finished"
    assert result["content"][0]["toolUseId"] == "call_1"
    assert result["content"][0]["status"] == "cancelled"
    assert session.transcript.open_calls == {}
    assert live.store.inflight_stream(session.id) is None
    assert live.leases.held == set()


async def test_opening_a_session_a_dead_owner_left_repairs_it(live: LiveSessions) -> None:
    dead_owners_turn(live, "sess_dead")
    repaired(live, live.open("sess_dead"))


async def test_a_repair_leaves_a_live_owners_turn_alone(live: LiveSessions) -> None:
    dead_owners_turn(live, "sess_busy")
    me = current_owner()
    other = Owner("someone-else", me.pid, me.host, me.started)  # alive: our own process
    assert live.store.acquire_lease("sess_busy", other, Work.TURN.value, "a1", 0.0).mine
    live.store.heartbeat(other, time.time())
    session = live.open("sess_busy")
    assert session.transcript.open_calls and live.store.inflight_stream("sess_busy")
    with pytest.raises(SessionBusy):
        await live.run(session, Turn(session, text_prompt("mine now")))
    live.store.release_lease("sess_busy", other)
    live.repair(session)
    repaired(live, session)


async def test_a_repair_that_cannot_write_is_tried_again(
    live: LiveSessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead_owners_turn(live, "sess_full")
    store = live.store
    append = store.append

    def full(*args: Any, **kwargs: Any) -> int:
        raise StoreError("the disk is full")

    monkeypatch.setattr(store, "append", full)
    with pytest.raises(StoreError):
        live.open("sess_full")
    assert live.leases.held == set() and store.get_lease("sess_full") is None
    assert store.inflight_stream("sess_full") is not None  # nothing lost
    monkeypatch.setattr(store, "append", append)
    live.sessions.clear()
    repaired(live, live.open("sess_full"))


async def test_a_fork_at_the_end_copies_the_held_parent_instead_of_folding_its_log(
    live: LiveSessions, tmp_path: Path
) -> None:
    """Forking stays O(1) in the parent's messages in memory too: the child starts from
    the parent's transcript copied, and only its own events are read from the store."""
    session = new(live, "scripted:echo")
    for n in (1, 2):
        await live.run(session, Turn(session, text_prompt(f"question {n}")))
    forked, base = fork_with_base(live, session.id, None, None)
    assert base is not None
    read: list[int] = []
    load_events = live.store.load_events

    def counted(*args: Any, **kwargs: Any) -> Any:
        got = list(load_events(*args, **kwargs))
        read.append(len(got))
        return got

    live.store.load_events = counted  # type: ignore[method-assign]
    child = live.open_fork(forked.session_id, base)
    live.store.load_events = load_events  # type: ignore[method-assign]
    assert sum(read) <= 1  # the fork's own events (its title), not the parent's
    folded = LiveSessions(EventStore(tmp_path / "threadline.db"), ProviderRegistry(), FakeEditor())
    again = folded.open(forked.session_id)
    assert child.transcript.history_json().data == again.transcript.history_json().data
    assert len(child.transcript.messages) == len(session.transcript.messages) == 4
    # the child's later turns are its own: the parent's transcript does not move
    await live.run(child, Turn(child, text_prompt("only in the fork")))
    assert len(child.transcript.messages) == 6 and len(session.transcript.messages) == 4
    # at an earlier message, the child is folded from the store's log
    first = session.transcript.messages[1]["messageId"]
    assert fork_with_base(live, session.id, first, None)[1] is None
