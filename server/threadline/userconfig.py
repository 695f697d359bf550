"""The one loader for ``threadline.toml``: named providers and models, plus env overrides.

Where: ``$THREADLINE_CONFIG`` if set, else ``threadline.toml`` in the platform's user
config folder (``platformdirs.user_config_dir("threadline")``). A missing file is an
empty config: the built-in ``openai`` and ``anthropic`` providers still work from the
usual environment variables. Example::

    default_model = "qwen"
    store = "postgresql://team@db.internal/threadline"   # optional; see docs/teams.md

    [providers.lmstudio]            # any OpenAI-compatible server
    type = "openai"
    base_url = "http://127.0.0.1:1234/v1"
    context_window = 32768

    [providers.anthropic.policies]  # tune a built-in provider
    retries = 5

    [models.qwen]                   # a name users pick at session/new
    provider = "lmstudio"
    model = "qwen2.5-7b-instruct"
    name = "Qwen 2.5 7B (LM Studio)"

    [models.claude]
    provider = "anthropic"
    model = "claude-sonnet-4-5"
    thinking_budget = 4096
    price = { input = 3.0, output = 15.0 }   # USD per million tokens (optional)

    [models.qwen-local]             # a GGUF file served by a shared local model server
    gguf = "~/models/qwen2.5-7b-instruct-q4_k_m.gguf"
    server = "llama-server"         # or "llama_cpp.server" (the default)
    slots = 4
    [models.qwen-local.supervision]
    idle_timeout = 600

A model with ``gguf`` names no provider: the first sidecar that needs it starts the
server (see :mod:`threadline.providers.modelserver`), every sidecar on the same
``THREADLINE_HOME`` shares it.

Environment overrides (they win over the file): ``<PROVIDER>_BASE_URL`` for a provider
named ``<provider>`` (so ``OPENAI_BASE_URL`` and ``ANTHROPIC_BASE_URL`` for the
built-ins; ``base_url_env`` names another variable), and the key is read from
``api_key_env`` (default ``<PROVIDER>_API_KEY``). Keys live only in memory, wrapped in
:class:`Secret` whose ``repr`` and ``str`` are masked, so printing or logging a config
never shows one.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

CONFIG_ENV = "THREADLINE_CONFIG"
FILE_NAME = "threadline.toml"

ProviderKind = Literal["openai", "anthropic"]
KINDS: tuple[ProviderKind, ...] = ("openai", "anthropic")

BUILTIN_PROVIDERS: dict[str, ProviderKind] = {"openai": "openai", "anthropic": "anthropic"}

# Keys a provider or model table may carry besides the structural ones; each provider
# module reads the ones it understands (unknown keys are rejected here, with the list).
OPENAI_OPTIONS = frozenset(
    {
        "tool_results",
        "stream_tools",
        "max_tokens_param",
        "extra_body",
        "tokenizer",
        "send_reasoning",
    }
)
ANTHROPIC_OPTIONS = frozenset({"thinking_budget", "prompt_cache"})
COMMON_OPTIONS = frozenset(
    {
        "context_window",
        "max_tokens",
        "temperature",
        "connect_timeout",
        "tools_top_k",
        "tools_offer_all_up_to",
        "images",
    }
)
PROVIDER_KEYS = frozenset(
    {"type", "base_url", "base_url_env", "api_key_env", "api_key", "headers", "policies"}
)
MODEL_KEYS = frozenset({"provider", "model", "name", "description", "policies", "price"})
SERVER_MODEL_KEYS = frozenset(
    {
        "gguf",
        "server",
        "slots",
        "threads",
        "chat_format",
        "server_binary",
        "server_args",
        "prompt_cache_mb",
        "supervision",
        "name",
        "description",
        "price",
    }
)

ServerKind = Literal["llama_cpp.server", "llama-server"]
SERVER_KINDS: tuple[ServerKind, ...] = ("llama_cpp.server", "llama-server")


class ConfigError(ValueError):
    """The config file is unreadable or names something that does not exist."""


class Secret:
    """A credential that never prints: ``repr``/``str`` are masked; ``reveal()`` reads it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


@dataclass(frozen=True, slots=True)
class ProviderEntry:
    """A configured endpoint: built-in (openai, anthropic) or named in the file."""

    name: str
    kind: ProviderKind
    base_url: str | None = None
    api_key_env: str | None = None
    api_key: Secret | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    policies: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def key_source(self) -> str:
        """Where the key comes from, for people (never the key itself)."""
        if self.api_key:
            return f"${self.api_key_env}" if self.api_key_env else "config file"
        return "none"


@dataclass(frozen=True, slots=True)
class Supervision:
    """How a shared local model server is watched (``[models.X.supervision]``).

    Seconds, except the restart count. Tests set them small; the defaults suit
    multi-gigabyte models that take a while to load."""

    idle_timeout: float = 600.0
    """Stop the server when no sidecar has used it for this long."""
    ready_timeout: float = 300.0
    """A server whose health endpoint has not answered by then is killed (a crash)."""
    stall_timeout: float = 60.0
    """In flight, neither streamed bytes nor CPU time for this long: killed, restarted."""
    slot_wait: float = 600.0
    """Longest wait for a free slot before the request fails with ``no_slot``."""
    max_restarts: int = 3
    """Restarts allowed within ``restart_window``; one more crash is a lasting failure."""
    restart_window: float = 60.0


@dataclass(frozen=True, slots=True)
class LocalServer:
    """A GGUF file that a supervised local server (shared by every sidecar) runs."""

    gguf: Path
    kind: ServerKind = "llama_cpp.server"
    slots: int = 1
    """Requests in flight at once: 1 for llama_cpp.server (it serialises anyway);
    ``--parallel`` for llama-server."""
    threads: int | None = None
    chat_format: str | None = None
    """llama_cpp.server's ``--chat_format`` (default: the template in the GGUF)."""
    binary: str | None = None
    """The llama-server executable (default: ``llama-server`` on ``PATH``)."""
    args: tuple[str, ...] = ()
    """Extra command-line arguments for the server."""
    prompt_cache_mb: int | None = None
    """MiB of evaluated prompts the server keeps for sessions other than the last one
    (0: none). None: 1024 for llama_cpp.server, llama-server's own ``--cache-ram``."""
    supervision: Supervision = field(default_factory=Supervision)


@dataclass(frozen=True, slots=True)
class Price:
    """What a model's tokens cost, in US dollars per million (``price = {input, output}``
    in its ``[models.X]`` table): the session's ``usage_update.cost`` is summed from it.
    Input is the whole prompt (cache reads and writes are counted in it, at the input
    price: providers' cache discounts are not modelled)."""

    input: float
    output: float

    def of(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000

    @classmethod
    def parse(cls, raw: Any, where: str) -> Price | None:
        """A ``price`` table; None when absent. Both prices, non-negative numbers."""
        if raw is None:
            return None
        if not isinstance(raw, dict) or set(raw) != {"input", "output"}:  # pyright: ignore[reportUnknownArgumentType]
            raise ConfigError(f"[{where}] price must be {{ input = …, output = … }}")
        values: list[float] = []
        for key in ("input", "output"):
            value = raw[key]  # pyright: ignore[reportUnknownVariableType]
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigError(f"[{where}] price.{key} must be a number ≥ 0 (USD per Mtok)")
            values.append(float(value))
        return cls(values[0], values[1])


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """A model users can pick: a provider plus the model name that provider expects."""

    id: str
    provider: ProviderEntry
    model: str
    name: str | None = None
    description: str | None = None
    policies: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    server: LocalServer | None = None
    """Set for a GGUF run by a shared local server (then ``provider`` is a stand-in)."""
    price: Price | None = None

    def option(self, key: str, default: Any = None) -> Any:
        return self.options.get(key, default)


@dataclass(frozen=True, slots=True)
class UserConfig:
    path: Path | None
    default_model: str | None = None
    providers: dict[str, ProviderEntry] = field(default_factory=dict)
    models: dict[str, ModelEntry] = field(default_factory=dict)

    def resolve(self, model: str) -> ModelEntry | None:
        """A configured name, or ``<provider>:<model>`` for any known provider."""
        entry = self.models.get(model)
        if entry is not None:
            return entry
        prefix, sep, rest = model.partition(":")
        provider = self.providers.get(prefix)
        if not sep or not rest or provider is None:
            return None
        return ModelEntry(
            id=model,
            provider=provider,
            model=rest,
            policies=dict(provider.policies),
            options=dict(provider.options),
        )


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    explicit = env.get(CONFIG_ENV)
    if explicit:
        return Path(explicit).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("threadline", appauthor=False)) / FILE_NAME


STORE_ENV = "THREADLINE_STORE"


def store_url(env: Mapping[str, str] | None = None) -> Secret | None:
    """The session store chosen by ``$THREADLINE_STORE``, else by ``store = ...`` in the
    config file; None means SQLite in ``THREADLINE_HOME``. Only the ``store`` key is
    read here: a mistake elsewhere in the file must not move a team's sessions."""
    env = os.environ if env is None else env
    explicit = env.get(STORE_ENV)
    if explicit:
        return Secret(explicit)
    path = config_path(env)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    value = data.get("store")
    if value is not None and not isinstance(value, str):
        raise ConfigError(f'{path}: store must be a string such as "postgresql://host/db"')
    return Secret(value) if value else None


def load(path: Path | None = None, env: Mapping[str, str] | None = None) -> UserConfig:
    """Read the config file (if any) and apply environment overrides."""
    env = os.environ if env is None else env
    path = path or config_path(env)
    data: dict[str, Any] = {}
    found: Path | None = None
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        found = path
    elif env.get(CONFIG_ENV):
        raise ConfigError(f"{CONFIG_ENV} names {path}, which is not a file")
    try:
        return parse(data, env, path=found)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def parse(
    data: Mapping[str, Any], env: Mapping[str, str] | None = None, *, path: Path | None = None
) -> UserConfig:
    env = os.environ if env is None else env
    unknown = set(data) - {"default_model", "providers", "models", "store"}
    if unknown:
        raise ConfigError(f"unknown top-level keys: {', '.join(sorted(unknown))}")
    default_model = data.get("default_model")
    if default_model is not None and not isinstance(default_model, str):
        raise ConfigError("default_model must be a string")
    store = data.get("store")
    if store is not None and not isinstance(store, str):
        raise ConfigError('store must be a string such as "postgresql://host/db"')
    raw_providers = _table(data.get("providers", {}), "providers")
    providers: dict[str, ProviderEntry] = {}
    for name in sorted({*BUILTIN_PROVIDERS, *raw_providers}):
        providers[name] = _provider(name, _table(raw_providers.get(name, {}), name), env)
    models: dict[str, ModelEntry] = {}
    for name, raw in _table(data.get("models", {}), "models").items():
        table = _table(raw, f"models.{name}")
        if "gguf" in table:
            models[name] = _server_model(name, table, path)
        else:
            models[name] = _model(name, table, providers)
    return UserConfig(path, default_model, providers, models)


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"[{where}] must be a table")
    return dict(value)  # pyright: ignore[reportUnknownArgumentType]


def _allowed(kind: ProviderKind) -> frozenset[str]:
    return COMMON_OPTIONS | (OPENAI_OPTIONS if kind == "openai" else ANTHROPIC_OPTIONS)


def _provider(name: str, raw: dict[str, Any], env: Mapping[str, str]) -> ProviderEntry:
    where = f"providers.{name}"
    kind = raw.get("type", BUILTIN_PROVIDERS.get(name))
    if kind not in KINDS:
        raise ConfigError(f'[{where}] needs type = "openai" or "anthropic"')
    unknown = set(raw) - PROVIDER_KEYS - _allowed(kind)
    if unknown:
        raise ConfigError(f"[{where}] unknown keys: {', '.join(sorted(unknown))}")
    env_name = name.upper().replace("-", "_").replace(".", "_")
    base_url_env = _str(raw, "base_url_env", where) or f"{env_name}_BASE_URL"
    base_url = env.get(base_url_env) or _str(raw, "base_url", where)
    api_key_env = _str(raw, "api_key_env", where)
    if api_key_env is None and "api_key_env" not in raw:
        api_key_env = f"{env_name}_API_KEY"
    key = env.get(api_key_env) if api_key_env else None
    inline = _str(raw, "api_key", where)
    if not key and inline:
        key, api_key_env = inline, None
    headers = _table(raw.get("headers", {}), f"{where}.headers")
    return ProviderEntry(
        name=name,
        kind=kind,
        base_url=base_url or None,
        api_key_env=api_key_env or None,
        api_key=Secret(key) if key else None,
        headers={str(k): str(v) for k, v in headers.items()},
        policies=_table(raw.get("policies", {}), f"{where}.policies"),
        options={k: v for k, v in raw.items() if k in _allowed(kind)},
    )


def _model(name: str, raw: dict[str, Any], providers: dict[str, ProviderEntry]) -> ModelEntry:
    where = f"models.{name}"
    provider_name = _str(raw, "provider", where)
    model = _str(raw, "model", where)
    if not provider_name or not model:
        raise ConfigError(f"[{where}] needs provider and model")
    provider = providers.get(provider_name)
    if provider is None:
        known = ", ".join(sorted(providers))
        raise ConfigError(f"[{where}] names unknown provider {provider_name!r} (known: {known})")
    unknown = set(raw) - MODEL_KEYS - _allowed(provider.kind)
    if unknown:
        raise ConfigError(f"[{where}] unknown keys: {', '.join(sorted(unknown))}")
    policies = {**provider.policies, **_table(raw.get("policies", {}), f"{where}.policies")}
    options = {**provider.options, **{k: v for k, v in raw.items() if k in _allowed(provider.kind)}}
    return ModelEntry(
        id=name,
        provider=provider,
        model=model,
        name=_str(raw, "name", where),
        description=_str(raw, "description", where),
        policies=policies,
        options=options,
        price=Price.parse(raw.get("price"), where),
    )


def _server_model(name: str, raw: dict[str, Any], path: Path | None) -> ModelEntry:
    """A ``gguf`` model: run by a shared local server, spoken to as OpenAI-compatible."""
    where = f"models.{name}"
    allowed = SERVER_MODEL_KEYS | _allowed("openai")
    unknown = set(raw) - allowed
    if unknown:
        raise ConfigError(f"[{where}] unknown keys: {', '.join(sorted(unknown))}")
    gguf = Path(_str(raw, "gguf", where) or "").expanduser()
    if not gguf.is_absolute() and path is not None:
        gguf = path.parent / gguf
    kind = raw.get("server", "llama_cpp.server")
    if kind not in SERVER_KINDS:
        raise ConfigError(f'[{where}] server must be "llama_cpp.server" or "llama-server"')
    slots = _positive_int(raw, "slots", where, 1)
    if kind == "llama_cpp.server" and slots != 1:
        raise ConfigError(
            f"[{where}] llama_cpp.server runs one request at a time: slots must be 1 "
            '(use server = "llama-server" for parallel slots)'
        )
    args = raw.get("server_args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):  # pyright: ignore[reportUnknownVariableType]
        raise ConfigError(f"[{where}] server_args must be a list of strings")
    server = LocalServer(
        gguf=Path(os.path.abspath(gguf)),  # not resolve(): a symlink swapped is a change
        kind=kind,
        slots=slots,
        threads=_positive_int(raw, "threads", where, None),
        chat_format=_str(raw, "chat_format", where),
        binary=_str(raw, "server_binary", where),
        args=tuple(args),  # pyright: ignore[reportUnknownArgumentType]
        prompt_cache_mb=_count(raw, "prompt_cache_mb", where),
        supervision=_supervision(_table(raw.get("supervision", {}), f"{where}.supervision"), where),
    )
    llama_cpp_python = kind == "llama_cpp.server"
    options: dict[str, Any] = {
        # llama-cpp-python's function-calling template drops role "tool" messages and
        # cannot stream an automatic tool choice; llama-server has neither limit.
        "tool_results": "user" if llama_cpp_python else "native",
        "stream_tools": not llama_cpp_python,
    }
    options.update({k: v for k, v in raw.items() if k in _allowed("openai")})
    return ModelEntry(
        id=name,
        provider=ProviderEntry(name=kind, kind="openai"),
        model=gguf.stem,
        name=_str(raw, "name", where),
        description=_str(raw, "description", where)
        or f"{gguf.name} on a shared local {kind} ({slots} slot{'s' if slots != 1 else ''})",
        options=options,
        server=server,
        price=Price.parse(raw.get("price"), where),
    )


def _supervision(raw: dict[str, Any], where: str) -> Supervision:
    known = set(Supervision.__dataclass_fields__)
    unknown = set(raw) - known
    if unknown:
        raise ConfigError(
            f"[{where}.supervision] unknown keys: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(known))})"
        )
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError(f"[{where}.supervision] {key} must be a non-negative number")
        values[key] = int(value) if key == "max_restarts" else float(value)
    return Supervision(**values)


def _positive_int(raw: dict[str, Any], key: str, where: str, default: int | None) -> Any:
    value = raw.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"[{where}] {key} must be a positive integer")
    return value


def _count(raw: dict[str, Any], key: str, where: str) -> int | None:
    value = raw.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ConfigError(f"[{where}] {key} must be an integer ≥ 0")
    return value


def _str(raw: dict[str, Any], key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"[{where}] {key} must be a string")
    return value
