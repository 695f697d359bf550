"""The model server's parts without a model: config, command lines, the cross-process
slot queue (real ``flock`` locks), the watchdog on real processes, ``/proc`` identity."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.providers.helpers import collect, errors
from threadline.providers.base import ChatMessage, ChatRequest
from threadline.providers.modelserver import procfs
from threadline.providers.modelserver.home import ServerHome
from threadline.providers.modelserver.provider import ModelServerProvider, shared_server_provider
from threadline.providers.modelserver.slots import NoSlot, SlotQueue
from threadline.providers.modelserver.spec import WARM_MODULE, ServerSpec, SpecError
from threadline.providers.modelserver.watchdog import Watchdog
from threadline.providers.registry import ProviderRegistry
from threadline.userconfig import ConfigError, Supervision, parse


def config(tmp_path: Path, body: str) -> dict[str, object]:
    import tomllib

    return tomllib.loads(body)


def test_gguf_model_entries(tmp_path: Path) -> None:
    data = config(
        tmp_path,
        '[models.a]\ngguf = "models/a.gguf"\nthreads = 2\ncontext_window = 4096\n'
        "[models.a.supervision]\nstall_timeout = 5\nmax_restarts = 2\n"
        '[models.b]\ngguf = "/m/b.gguf"\nserver = "llama-server"\nslots = 4\n'
        'server_args = ["--flash-attn"]\nprompt_cache_mb = 0\n',
    )
    cfg = parse(data, {}, path=tmp_path / "threadline.toml")
    a, b = cfg.models["a"], cfg.models["b"]
    assert a.server is not None and b.server is not None
    assert a.server.gguf == tmp_path / "models" / "a.gguf"  # relative to the config file
    assert a.server.kind == "llama_cpp.server" and a.server.slots == 1
    assert a.server.supervision == Supervision(stall_timeout=5.0, max_restarts=2)
    # llama-cpp-python's limits are the defaults for its server, not for llama-server.
    assert a.option("tool_results") == "user" and a.option("stream_tools") is False
    assert b.option("tool_results") == "native" and b.option("stream_tools") is True
    assert b.server.kind == "llama-server" and b.server.slots == 4
    assert b.server.args == ("--flash-attn",)
    assert a.server.prompt_cache_mb is None and b.server.prompt_cache_mb == 0
    assert cfg.resolve("a") is a


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('gguf = "x.gguf"\nslots = 2\n', "slots must be 1"),
        ('gguf = "x.gguf"\nserver = "ollama"\n', "server must be"),
        ('gguf = "x.gguf"\n[models.m.supervision]\nstall = 1\n', "unknown keys: stall"),
        ('gguf = "x.gguf"\nslots = 0\n', "positive integer"),
        ('gguf = "x.gguf"\nprompt_cache_mb = -1\n', "integer ≥ 0"),
        ('gguf = "x.gguf"\nprompt_cache_mb = "1G"\n', "integer ≥ 0"),
        ('gguf = "x.gguf"\nprovider = "openai"\n', "unknown keys: provider"),
    ],
)
def test_bad_gguf_entries_are_explained(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(config(tmp_path, "[models.m]\n" + body), {})


def spec(**kw: object) -> ServerSpec:
    return ServerSpec(**{"kind": "llama_cpp.server", "gguf": "/m/qwen.gguf", **kw})  # type: ignore[arg-type]


def test_commands_and_identity() -> None:
    one = spec(threads=2, chat_format="chatml")
    argv = one.command(4321)
    # llama_cpp.server's app with a prompt cache whose bound holds (1 GiB by default);
    # with none, llama_cpp.server itself. Neither computes every prompt token's logits.
    assert argv[1:5] == ["-m", WARM_MODULE, "--prompt_cache_mb", "1024"]
    assert spec(prompt_cache_mb=64).command(1)[4] == "64"
    assert spec(prompt_cache_mb=0).command(1)[1:3] == ["-m", "llama_cpp.server"]
    assert argv[argv.index("--logits_all") + 1] == "False"
    assert argv[argv.index("--n_threads_batch") + 1] == "2"  # threads for prompts too
    assert argv[argv.index("--port") : argv.index("--port") + 2] == ["--port", "4321"]
    assert "--chat_format" in argv and "127.0.0.1" in argv
    many = spec(kind="llama-server", slots=3, context_window=1000, binary="/opt/llama-server")
    argv = many.command(9)
    assert argv[0] == "/opt/llama-server"
    assert argv[argv.index("--parallel") + 1] == "3"
    assert argv[argv.index("--ctx-size") + 1] == "3000"  # the window for each slot
    assert "--cache-ram" not in argv  # its own default; builds before 2025-10 lack it
    assert spec(kind="llama-server", binary="/b", prompt_cache_mb=512).command(1)[-2:] == [
        "--cache-ram",
        "512",
    ]
    assert many.health_path == "/health" and one.health_path == "/v1/models"
    # Sidecar-side waits do not make another server; anything the server runs with does.
    assert spec().key == spec(supervision=Supervision(stall_timeout=1, slot_wait=1)).key
    assert spec().key != spec(threads=4).key
    assert spec().key.startswith("qwen-")
    assert ServerSpec.from_json(many.to_json()) == many


def test_server_environment_keeps_its_address_and_key_ours() -> None:
    base = {"PATH": "/bin", "HOST": "0.0.0.0", "PORT": "80", "API_KEY": "theirs", "X": "1"}
    env = spec().environment("ours", base)
    assert env == {"PATH": "/bin", "X": "1", "API_KEY": "ours"}
    assert spec(kind="llama-server").environment("k", base)["LLAMA_API_KEY"] == "k"


def test_llama_server_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SpecError, match="llama-server is not on PATH"):
        spec(kind="llama-server").command(1)


def test_registry_serves_gguf_models_without_http_policies(
    tmp_path: Path, isolated_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THREADLINE_HOME", str(tmp_path / "home"))
    isolated_config.write_text(f'[models.m]\ngguf = "{tmp_path / "m.gguf"}"\n')
    registry = ProviderRegistry()
    assert registry.validate("m") == "m"
    [entry] = [m for m in registry.available() if m["modelId"] == "m"]
    assert "shared local llama_cpp.server" in entry["description"]
    provider = anyio.run(registry.get, "m")
    assert isinstance(provider, ModelServerProvider)
    reach = anyio.run(registry.reachable, "m")
    assert not reach.ok and "not found" in reach.detail
    assert not (tmp_path / "home").exists(), "looking starts nothing, writes nothing"


# -- slots ------------------------------------------------------------------------------


@pytest.fixture
def server_home(tmp_path: Path) -> ServerHome:
    return ServerHome(tmp_path / "srv").create()


async def take(queue: SlotQueue, seen: list[str], max_wait: float = 30) -> None:
    async for line in queue.wait(max_wait):
        seen.append(line)


async def test_waiters_are_served_in_order(server_home: ServerHome) -> None:
    holder = SlotQueue(server_home, 1).try_take()
    assert holder is not None
    order: list[int] = []
    lines: dict[int, list[str]] = {i: [] for i in range(3)}

    async def waiter(i: int) -> None:
        q = SlotQueue(server_home, 1)
        await take(q, lines[i])
        assert q.slot is not None
        order.append(i)
        await anyio.sleep(0.1)
        q.slot.release()

    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(waiter, i)
            await anyio.sleep(0.2)  # tickets taken in this order
        holder.release()
    assert order == [0, 1, 2]
    assert lines[0][0] == "waiting for the model: 1 ahead (1 of 1 slot busy)"
    assert lines[2][0] == "waiting for the model: 3 ahead (1 of 1 slot busy)"


async def test_cancelled_waiter_leaves_the_queue_and_dead_tickets_are_swept(
    server_home: ServerHome,
) -> None:
    holder = SlotQueue(server_home, 1).try_take()
    assert holder is not None
    # A ticket nobody holds a lock on: its owner died.
    (server_home.queue_dir / "000000000000").touch()
    (server_home.queue_dir / "next").write_text("1")
    seen: list[str] = []
    with anyio.move_on_after(0.5):
        await take(SlotQueue(server_home, 1), seen)
    assert seen == ["waiting for the model: 1 ahead (1 of 1 slot busy)"]
    assert [n for n in os.listdir(server_home.queue_dir) if n.isdigit()] == []
    with pytest.raises(NoSlot, match=r"no free slot on the model server after 0\.3 s"):
        await take(SlotQueue(server_home, 1), [], max_wait=0.3)
    holder.release()
    q = SlotQueue(server_home, 1)
    await take(q, seen)
    assert q.slot is not None and q.slot.index == 0


async def test_two_slots_are_two_requests_in_flight(server_home: ServerHome) -> None:
    a, b, c = (SlotQueue(server_home, 2) for _ in range(3))
    await take(a, [])
    await take(b, [])
    assert a.slot and b.slot and {a.slot.index, b.slot.index} == {0, 1}
    assert server_home.slots_busy(2) == 2
    with pytest.raises(NoSlot):
        await take(c, [], max_wait=0.2)
    a.slot.release()
    await take(c, [])
    assert c.slot is not None


# -- liveness ---------------------------------------------------------------------------


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def test_watchdog_kills_a_silent_idle_process_and_spares_a_busy_one(
    processes: list[subprocess.Popen[bytes]],
) -> None:
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    processes += [idle, busy]
    time.sleep(0.5)
    st_idle, st_busy = procfs.stat(idle.pid), procfs.stat(busy.pid)
    assert st_idle and st_busy
    with (
        Watchdog(idle.pid, st_idle.start, 1.0) as dog_idle,
        Watchdog(busy.pid, st_busy.start, 1.0) as dog_busy,
    ):
        assert idle.wait(15) == -signal.SIGKILL
        assert dog_idle.stalled_for is not None and dog_idle.stalled_for >= 1.0
        time.sleep(1.5)
        assert busy.poll() is None and dog_busy.stalled_for is None


def test_proc_identity_guards_against_pid_reuse(
    processes: list[subprocess.Popen[bytes]],
) -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    processes.append(p)
    st = procfs.stat(p.pid)
    assert st is not None and procfs.alive(p.pid, st.start)
    assert not procfs.kill(p.pid, st.start + 1)  # another process's start time
    assert p.poll() is None
    assert procfs.kill(p.pid, st.start)
    p.wait(10)
    assert not procfs.alive(p.pid, st.start)


@pytest.mark.parametrize(
    ("server", "make_file", "expected"),
    [
        ("llama_cpp.server", False, "does not exist"),
        ("llama-server", True, "llama-server is not on PATH"),
    ],
)
async def test_unstartable_servers_fail_at_once_with_the_reason(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    server: str,
    make_file: bool,
    expected: str,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    model = tmp_path / "m.gguf"
    if make_file:
        model.write_bytes(b"GGUF")
    cfg = parse(config(tmp_path, f'[models.m]\ngguf = "{model}"\nserver = "{server}"\n'), {})
    provider = shared_server_provider(cfg.models["m"], root=tmp_path / "home")
    events = await collect(provider, ChatRequest([ChatMessage("user", "hi")]), timeout=10)
    [error] = errors(events)
    assert error.reason == "provider_unavailable" and expected in error.message
    assert not provider.launcher.home.keeper_alive(), "nothing was started"


def test_llama_server_requests_keep_the_prompt_in_their_slot(tmp_path: Path) -> None:
    """llama-server keeps each slot's evaluated prompt only when asked
    (``cache_prompt``); what the entry's own ``extra_body`` says wins."""
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    body = f'[models.m]\ngguf = "{model}"\nserver = "llama-server"\n'
    plain = parse(config(tmp_path, body), {}).models["m"]
    assert shared_server_provider(plain, tmp_path).options.extra_body == {"cache_prompt": True}
    told = parse(config(tmp_path, body + "extra_body = { cache_prompt = false }\n"), {})
    assert shared_server_provider(told.models["m"], tmp_path).options.extra_body == {
        "cache_prompt": False
    }
    other = parse(config(tmp_path, f'[models.m]\ngguf = "{model}"\n'), {}).models["m"]
    assert shared_server_provider(other, tmp_path).options.extra_body == {}
