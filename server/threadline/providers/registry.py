"""Model strings → providers, created lazily and cached for the server's lifetime.

``local`` (the embedded SmolLM2 model) is the default; ``scripted:<script>`` replays
events for tests and benchmarks. Other models come from the user config
(:mod:`threadline.userconfig`): ``openai:<model>``, ``anthropic:<model>``,
``<configured provider>:<model>`` or a name from ``[models]``. HTTP providers are
wrapped in a :class:`~.policies.PolicyProvider` (retries, rate limits, timeouts) whose
rate limiter is shared by every model of the same provider entry.

Provider modules and SDKs are imported only when first used so that ``initialize``
stays fast; reading the config file is cheap (stdlib ``tomllib``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import (
    LARGE_MODEL_TOOLS,
    SMALL_MODEL_TOOLS,
    TEXT_ONLY,
    ImageSupport,
    Provider,
    ToolOfferLimits,
)

if TYPE_CHECKING:
    from ..userconfig import ModelEntry, Price, UserConfig
    from .policies import RateLimiter
    from .traits import TraitStore

log = logging.getLogger(__name__)

LOCAL_ALIASES = ("local", "local:smollm2-135m", "smollm2")
DEFAULT_MODEL = "local:smollm2-135m"

OPENAI_COMPAT_CONTEXT = 8192
"""Context window assumed for a self-hosted OpenAI-compatible server not configured."""
OPENAI_CONTEXT = 128_000
ANTHROPIC_CONTEXT = 200_000


class UnknownModel(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Reachability:
    ok: bool
    detail: str


class ProviderRegistry:
    def __init__(self, default_model: str | None = None, config: UserConfig | None = None) -> None:
        self._explicit_default = default_model
        self._config = config
        self._providers: dict[str, Provider] = {}
        self._limiters: dict[str, RateLimiter] = {}
        self._local_model: Any = None
        self._traits: TraitStore | None = None

    @property
    def traits(self) -> TraitStore:
        """What OpenAI-compatible servers were found to do (in the home folder)."""
        if self._traits is None:
            from .traits import TraitStore

            self._traits = TraitStore.in_home()
        return self._traits

    def learned(self, model: str) -> str:
        """What was learned about ``model``'s server, in words ("" when nothing)."""
        entry = self._entry(model)
        if entry is None or entry.provider.kind != "openai":
            return ""
        from .traits import server_key

        return self.traits.get(server_key(entry.provider.base_url, entry.model)).describe()

    # -- configuration ----------------------------------------------------------------

    @property
    def config(self) -> UserConfig:
        """The user config, read on first use (a broken file is logged, not fatal)."""
        if self._config is None:
            from ..userconfig import ConfigError, UserConfig, load

            try:
                self._config = load()
            except ConfigError as exc:
                log.error("ignoring the user config: %s", exc)
                self._config = UserConfig(path=None)
        return self._config

    @property
    def default_model(self) -> str:
        return self._explicit_default or self.config.default_model or DEFAULT_MODEL

    def validate(self, model: str) -> str:
        """Canonical model string, or UnknownModel with a message a user can act on."""
        if model in LOCAL_ALIASES:
            return DEFAULT_MODEL
        scheme, sep, _ = model.partition(":")
        if scheme == "scripted" and sep:
            return model
        if self.config.resolve(model) is not None:
            return model
        # Test models (scripted:…) are left out: they are not for people to pick.
        names = [DEFAULT_MODEL, *self.config.models]
        providers = [f"'{p}:<model>'" for p in sorted(self.config.providers)]
        choices = [repr(n) for n in names] + providers
        listed = ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]
        raise UnknownModel(f"unknown model {model!r}: use {listed}")

    def available(self) -> list[dict[str, Any]]:
        models: list[dict[str, Any]] = [
            {
                "modelId": DEFAULT_MODEL,
                "name": "SmolLM2 135M Instruct (embedded, CPU)",
                "description": "Runs locally through llama.cpp; no API key needed.",
            }
        ]
        for entry in self.config.models.values():
            models.append(
                {
                    "modelId": entry.id,
                    "name": entry.name or entry.id,
                    "description": entry.description
                    or f"{entry.model} via {entry.provider.name} ({entry.provider.kind})",
                }
            )
        default = self.default_model
        if all(m["modelId"] != default for m in models):
            try:
                self.validate(default)
                models.append({"modelId": default, "name": default})
            except UnknownModel:
                log.warning("the configured default model %r is unknown", default)
        return models

    def key_problem(self, model: str) -> str | None:
        """Why ``model`` cannot be called for want of an API key, or None. OpenAI's own
        endpoint and Anthropic need one; a local OpenAI-compatible server, and a GGUF
        file run by the shared model server (its provider a stand-in), do not."""
        entry = self._entry(model)
        if entry is None or entry.server is not None or entry.provider.api_key is not None:
            return None
        from .openai_compat import OPENAI_BASE_URL

        p = entry.provider
        base = (p.base_url or "").rstrip("/")
        if p.kind == "anthropic" or base in ("", OPENAI_BASE_URL):
            return f"no API key for {model}: set ${p.api_key_env or p.name.upper() + '_API_KEY'}"
        return None

    def default_max_tokens(self, model: str) -> int | None:
        if model == DEFAULT_MODEL:
            return 512
        entry = self._entry(model)
        value = entry.option("max_tokens") if entry is not None else None
        return int(value) if isinstance(value, int) else None

    def tool_limits(self, model: str) -> ToolOfferLimits:
        """How many tools each call of ``model`` is offered: few for the embedded
        model; for others every tool up to 30, unless the model's config says
        ``tools_top_k`` / ``tools_offer_all_up_to`` (0: always choose by relevance)."""
        if model in LOCAL_ALIASES:
            return SMALL_MODEL_TOOLS
        entry = self._entry(model)
        if entry is None:
            return LARGE_MODEL_TOOLS
        top_k = _int_or_none(entry.option("tools_top_k"))
        offer_all = entry.option("tools_offer_all_up_to")
        if top_k is None and offer_all is None:
            return LARGE_MODEL_TOOLS
        k = top_k or LARGE_MODEL_TOOLS.top_k
        return ToolOfferLimits(
            top_k=k,
            offer_all_up_to=int(offer_all) if isinstance(offer_all, int) else 0,
            plain_when_irrelevant=k <= SMALL_MODEL_TOOLS.top_k,
        )

    def images(self, model: str) -> ImageSupport:
        """Whether ``model`` sees images, and where (`vision.image_support`)."""
        from .vision import image_support, scripted_support

        if model in LOCAL_ALIASES or model == DEFAULT_MODEL:
            return TEXT_ONLY
        if model.startswith("scripted:"):
            return scripted_support(model.partition(":")[2])
        entry = self._entry(model)
        if entry is None:
            return TEXT_ONLY
        return image_support(entry)

    def price(self, model: str) -> Price | None:
        """What ``model``'s tokens cost (its ``price`` in threadline.toml); None: not
        priced. A scripted model's script may carry one (``"price": {input, output}``)."""
        from ..userconfig import Price

        if model.startswith("scripted:"):
            from .scripted import load_script

            try:
                raw = load_script(model.partition(":")[2]).get("price")
                return Price.parse(raw, model)
            except (OSError, ValueError):
                return None
        entry = self._entry(model)
        return entry.price if entry is not None else None

    def _entry(self, model: str) -> ModelEntry | None:
        if model in LOCAL_ALIASES or model.startswith("scripted:"):
            return None
        return self.config.resolve(model)

    # -- providers --------------------------------------------------------------------

    async def get(self, model: str) -> Provider:
        model = self.validate(model)
        provider = self._providers.get(model)
        if provider is not None:
            return provider
        # Creating is synchronous, so no other task can create the same one meanwhile.
        provider = self._create(model)
        self._providers[model] = provider
        return provider

    def _create(self, model: str) -> Provider:
        if model == DEFAULT_MODEL:
            from .local import LocalModel, LocalProvider

            if self._local_model is None:
                self._local_model = LocalModel()
            return LocalProvider(self._local_model)
        entry = self._entry(model)
        if entry is None:
            from .scripted import ScriptedProvider

            return ScriptedProvider(model.partition(":")[2])
        if entry.server is not None:
            # Supervision (restarts, stalls, slots) replaces the HTTP retry policies.
            return self.backend(entry)
        return self._wrap(entry, self.backend(entry))

    def backend(self, entry: ModelEntry) -> Provider:
        from .traits import optional_bool, tool_results_option

        """The bare HTTP provider of a configured model (no policies)."""
        if entry.server is not None:
            from .modelserver.provider import shared_server_provider

            return shared_server_provider(entry)
        if entry.provider.kind == "anthropic":
            from .anthropic_provider import AnthropicOptions, AnthropicProvider

            return AnthropicProvider(
                AnthropicOptions.configured(
                    entry,
                    ANTHROPIC_CONTEXT,
                    max_tokens=int(entry.option("max_tokens") or 4096),
                    thinking_budget=_int_or_none(entry.option("thinking_budget")),
                    prompt_cache=bool(entry.option("prompt_cache", True)),
                )
            )
        from .openai_compat import OPENAI_BASE_URL, OpenAICompatProvider, OpenAIOptions

        base_url = entry.provider.base_url
        is_openai = base_url is None or base_url.rstrip("/") == OPENAI_BASE_URL
        return OpenAICompatProvider(
            OpenAIOptions.configured(
                entry,
                OPENAI_CONTEXT if is_openai else OPENAI_COMPAT_CONTEXT,
                tool_results=tool_results_option(entry.option("tool_results")),
                stream_tools=optional_bool(entry.option("stream_tools")),
                traits=self.traits,
                max_tokens_param=entry.option("max_tokens_param"),
                extra_body=dict(entry.option("extra_body") or {}),
                tokenizer=entry.option("tokenizer"),
                send_reasoning=bool(entry.option("send_reasoning", False)),
            )
        )

    def _wrap(self, entry: ModelEntry, inner: Provider) -> Provider:
        from .policies import PolicyProvider, PolicySettings, RateLimiter

        try:
            settings = PolicySettings.from_mapping(entry.policies)
        except ValueError as exc:
            raise UnknownModel(f"model {entry.id!r}: {exc}") from exc
        limiter = self._limiters.get(entry.provider.name)
        if limiter is None:
            limiter = RateLimiter(
                settings.requests_per_period, settings.tokens_per_period, settings.period
            )
            self._limiters[entry.provider.name] = limiter
        return PolicyProvider(inner, settings, limiter=limiter)

    async def reachable(self, model: str, timeout: float = 5.0) -> Reachability:
        """Whether ``model`` can be used now: a cheap request to its server (no tokens
        spent), the model file for the local model. Never raises."""
        try:
            model = self.validate(model)
        except UnknownModel as exc:
            return Reachability(False, str(exc))
        if model == DEFAULT_MODEL:
            from .local import LocalModelError, find_model_path

            try:
                return Reachability(True, f"model file {find_model_path().name}")
            except LocalModelError as exc:
                return Reachability(False, str(exc))
        entry = self._entry(model)
        if entry is None:
            return Reachability(True, "scripted (tests)")
        backend: Any = self.backend(entry)
        try:
            ok, detail = await backend.reachable(timeout)
        finally:
            await backend.aclose()
        return Reachability(ok, detail)

    async def aclose(self) -> None:
        for p in self._providers.values():
            await p.aclose()
        self._providers.clear()


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value else None
