"""``threadline.toml`` loading, environment overrides, secrets, and model resolution."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.providers.fault_server import FaultServer
from threadline.providers.openai_compat import OpenAICompatProvider
from threadline.providers.policies import PolicyProvider
from threadline.providers.registry import DEFAULT_MODEL, ProviderRegistry, UnknownModel
from threadline.userconfig import ConfigError, Secret, load, parse
from threadline_client import ThreadlineClient
from threadline_client.client import RpcError

CONFIG = """
default_model = "qwen"

[providers.lmstudio]
type = "openai"
base_url = "http://127.0.0.1:1234/v1"
context_window = 32768
tool_results = "user"

[providers.lmstudio.policies]
retries = 5
idle_timeout = 30

[providers.anthropic]
prompt_cache = false

[models.qwen]
provider = "lmstudio"
model = "qwen2.5-7b-instruct"
name = "Qwen 2.5 7B"
max_tokens = 1000

[models.qwen.policies]
retries = 1

[models.claude]
provider = "anthropic"
model = "claude-sonnet-4-5"
thinking_budget = 2048
"""


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def test_builtin_providers_read_the_usual_environment() -> None:
    env = {"OPENAI_API_KEY": "sk-env-key-123456789", "OPENAI_BASE_URL": "http://h:1/v1"}
    config = parse({}, env)
    openai = config.providers["openai"]
    assert openai.kind == "openai" and openai.base_url == "http://h:1/v1"
    assert openai.api_key == Secret("sk-env-key-123456789")
    assert openai.key_source == "$OPENAI_API_KEY"
    assert config.providers["anthropic"].api_key is None
    entry = config.resolve("openai:gpt-4o-mini")
    assert entry is not None and entry.model == "gpt-4o-mini" and entry.provider is openai
    assert config.resolve("gpt-4o-mini") is None and config.resolve("nope:x") is None


def test_secrets_never_print() -> None:
    config = parse({"providers": {"x": {"type": "openai", "api_key": "sk-inline-abcdefghij"}}}, {})
    key = config.providers["x"].api_key
    assert key is not None and key.reveal() == "sk-inline-abcdefghij"
    assert "sk-inline" not in repr(config) and "sk-inline" not in str(config)
    assert str(key) == "***" and "sk-inline" not in f"{key!r} {key}"


def test_file_providers_models_and_env_overrides(isolated_config: Path) -> None:
    write(isolated_config, CONFIG)
    config = load(
        env={"THREADLINE_CONFIG": str(isolated_config), "LMSTUDIO_BASE_URL": "http://o/v1"}
    )
    assert config.path == isolated_config and config.default_model == "qwen"
    qwen = config.resolve("qwen")
    assert qwen is not None
    assert qwen.provider.base_url == "http://o/v1"  # the environment wins over the file
    assert qwen.model == "qwen2.5-7b-instruct" and qwen.name == "Qwen 2.5 7B"
    assert qwen.policies == {"retries": 1, "idle_timeout": 30}  # model over provider
    assert qwen.option("tool_results") == "user" and qwen.option("max_tokens") == 1000
    adhoc = config.resolve("lmstudio:llama-3.2-1b")
    assert adhoc is not None and adhoc.model == "llama-3.2-1b" and adhoc.option("context_window")
    claude = config.resolve("claude")
    assert claude is not None and claude.option("thinking_budget") == 2048
    assert claude.option("prompt_cache") is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("colour = 1", "unknown top-level keys: colour"),
        ('[providers.x]\nbase_url = "u"', 'needs type = "openai" or "anthropic"'),
        ('[providers.x]\ntype = "openai"\nthinking_budget = 1', "unknown keys: thinking_budget"),
        ('[models.m]\nprovider = "ghost"\nmodel = "x"', "unknown provider 'ghost'"),
        ('[models.m]\nprovider = "openai"', "needs provider and model"),
        ("not toml = = =", "cannot read"),
        ('[models.m]\nprovider = "openai"\nmodel = "x"\nprice = 3', "price must be"),
        ('[models.m]\nprovider = "openai"\nmodel = "x"\nprice = {input = 1}', "price must be"),
        (
            '[models.m]\nprovider = "openai"\nmodel = "x"\nprice = {input = -1, output = 2}',
            "price.input must be a number",
        ),
    ],
)
def test_config_errors_say_what_is_wrong(isolated_config: Path, text: str, message: str) -> None:
    write(isolated_config, text)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load(env={"THREADLINE_CONFIG": str(isolated_config)})


def test_missing_explicit_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a file"):
        load(env={"THREADLINE_CONFIG": str(tmp_path / "nope.toml")})
    assert load(tmp_path / "absent.toml", env={}).path is None  # the default may be absent


async def test_registry_resolves_configured_models(isolated_config: Path) -> None:
    write(isolated_config, CONFIG)
    registry = ProviderRegistry()
    assert registry.default_model == "qwen"
    ids = [m["modelId"] for m in registry.available()]
    assert ids == [DEFAULT_MODEL, "qwen", "claude"]
    assert registry.validate("qwen") == "qwen"
    assert registry.validate("openai:gpt-4o") == "openai:gpt-4o"
    assert registry.validate("local") == DEFAULT_MODEL
    assert registry.validate('scripted:{"rounds": []}').startswith("scripted:")
    with pytest.raises(UnknownModel, match="'qwen'"):
        registry.validate("gpt-17")
    assert registry.default_max_tokens("qwen") == 1000
    assert registry.default_max_tokens(DEFAULT_MODEL) == 512

    qwen = await registry.get("qwen")
    assert isinstance(qwen, PolicyProvider) and isinstance(qwen.inner, OpenAICompatProvider)
    assert qwen.settings.retries == 1 and qwen.settings.idle_timeout == 30
    assert qwen.context_window == 32768
    assert qwen.inner.options.tool_results == "user"
    other = await registry.get("lmstudio:another")
    assert isinstance(other, PolicyProvider)
    assert other.limiter is qwen.limiter  # one rate budget per provider entry
    claude = await registry.get("claude")
    assert claude.context_window == 200_000
    assert await registry.get("qwen") is qwen
    await registry.aclose()


async def test_registry_rejects_bad_policies(isolated_config: Path) -> None:
    write(isolated_config, "[providers.openai.policies]\nretrys = 2\n")
    registry = ProviderRegistry()
    with pytest.raises(UnknownModel, match="unknown policy keys: retrys"):
        await registry.get("openai:gpt-4o")


def test_a_broken_config_does_not_stop_the_server(isolated_config: Path) -> None:
    write(isolated_config, "bad = = toml")
    registry = ProviderRegistry()
    assert [m["modelId"] for m in registry.available()] == [DEFAULT_MODEL]


def test_initialize_path_never_imports_the_sdks(isolated_config: Path) -> None:
    write(isolated_config, CONFIG)
    code = (
        "import sys\n"
        "from threadline.providers.registry import ProviderRegistry\n"
        "r = ProviderRegistry()\n"
        "r.available(); r.validate('openai:gpt-4o'); r.validate('claude')\n"
        "bad = [m for m in ('openai', 'anthropic', 'tiktoken', 'llama_cpp') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


async def test_reachable(isolated_config: Path, fault: FaultServer) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    write(
        isolated_config,
        f"""
        [providers.up]
        type = "openai"
        base_url = "{fault.base_url}"
        [providers.down]
        type = "openai"
        base_url = "http://127.0.0.1:{closed}/v1"
        """,
    )
    registry = ProviderRegistry()
    up = await registry.reachable("up:fault-model", timeout=5)
    assert up.ok and up.detail == "model listed"
    down = await registry.reachable("down:x", timeout=5)
    assert not down.ok and "onnect" in down.detail
    no_key = await registry.reachable("anthropic:claude", timeout=5)
    assert not no_key.ok and "ANTHROPIC_API_KEY" in no_key.detail
    unknown = await registry.reachable("ghost", timeout=5)
    assert not unknown.ok
    local = await registry.reachable("local")
    assert local.ok and local.detail.endswith(".gguf")
    assert [r.path for r in fault.requests] == ["/v1/models"]


def test_a_missing_api_key_is_known_when_the_model_is_chosen() -> None:
    config = parse(
        {
            "providers": {"local": {"type": "openai", "base_url": "http://127.0.0.1:9/v1"}},
            "models": {"smol": {"gguf": "/models/smol.gguf"}},
        },
        {},
    )
    registry = ProviderRegistry(config=config)
    assert registry.key_problem("smol") is None  # a GGUF on the shared model server
    assert registry.key_problem("openai:gpt-4o-mini") == (
        "no API key for openai:gpt-4o-mini: set $OPENAI_API_KEY"
    )
    assert registry.key_problem("anthropic:claude-x") == (
        "no API key for anthropic:claude-x: set $ANTHROPIC_API_KEY"
    )
    assert registry.key_problem("local:some-model") is None  # a local server needs none
    assert registry.key_problem("local:smollm2-135m") is None
    assert registry.key_problem("scripted:echo") is None
    keyed = ProviderRegistry(config=parse({}, {"OPENAI_API_KEY": "sk-test-abcdefghijkl"}))
    assert keyed.key_problem("openai:gpt-4o-mini") is None


@pytest.fixture
async def keyless(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ThreadlineClient]:
    """A sidecar as a user without an OpenAI key starts it, initialized."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    env = {"THREADLINE_HOME": str(tmp_path / "home"), "THREADLINE_CONFIG": ""}
    client = await ThreadlineClient.spawn(env=env, stderr=subprocess.DEVNULL)
    try:
        await client.initialize()
        yield client
    finally:
        await client.close()


NO_KEY = "no API key for openai:gpt-4o-mini: set $OPENAI_API_KEY"


async def test_session_new_refuses_a_model_without_its_key(
    tmp_path: Path, keyless: ThreadlineClient
) -> None:
    """A model that cannot answer is refused when it is chosen, not at the first prompt."""
    client = keyless
    before = await client.list_sessions()
    with pytest.raises(RpcError) as refused:
        await client.request(
            "session/new",
            {
                "cwd": str(tmp_path),
                "mcpServers": [],
                "_meta": {"threadline": {"model": "openai:gpt-4o-mini"}},
            },
        )
    assert refused.value.code == -32602
    assert refused.value.message == NO_KEY
    assert refused.value.data == {"model": "openai:gpt-4o-mini", "reason": "no_api_key"}
    assert await client.list_sessions() == before  # nothing stored
    plain = await client.request(
        "session/new",
        {
            "cwd": str(tmp_path),
            "mcpServers": [],
            "_meta": {"threadline": {"model": "scripted:echo"}},
        },
    )
    assert "_meta" not in plain


async def test_choosing_a_model_without_its_key_is_refused_and_changes_nothing(
    tmp_path: Path, keyless: ThreadlineClient
) -> None:
    client = keyless
    sid = await client.new_session(cwd=str(tmp_path), model="scripted:echo")
    change = {"sessionId": sid, "configId": "model", "value": "openai:gpt-4o-mini"}
    with pytest.raises(RpcError) as refused:
        await client.request("session/set_config_option", change)
    assert (refused.value.code, refused.value.message) == (-32602, NO_KEY)
    (listed,) = [s for s in await client.list_sessions() if s["sessionId"] == sid]
    assert listed["_meta"]["model"] == "scripted:echo"
    assert (await client.prompt(sid, "still here"))["stopReason"] == "end_turn"


def test_a_models_price_is_read_and_looked_up(isolated_config: Path) -> None:
    """``[models.X] price`` (USD per million tokens) is what the session's cost uses;
    a model without one, or a ``provider:model`` name, has none."""
    write(isolated_config, CONFIG + "price = { input = 3, output = 15.5 }\n")
    registry = ProviderRegistry()
    price = registry.price("claude")
    assert price is not None and (price.input, price.output) == (3.0, 15.5)
    assert price.of(1_000_000, 2_000) == pytest.approx(3.031)
    assert registry.price("qwen") is None and registry.price("anthropic:claude-x") is None
    script = '{"rounds": [], "price": {"input": 1, "output": 2}}'
    scripted_price = registry.price("scripted:" + script)
    assert scripted_price is not None and scripted_price.output == 2.0
    assert registry.price('scripted:{"rounds": []}') is None
