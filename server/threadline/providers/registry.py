"""Model strings → providers, created lazily and cached for the server's lifetime.

``local`` (the embedded SmolLM2 model) is the default; ``scripted:<script>`` replays
events for tests and benchmarks. Provider modules are imported only when first used
so that ``initialize`` stays fast.
"""

from __future__ import annotations

from typing import Any

import anyio

from .base import Provider

LOCAL_ALIASES = ("local", "local:smollm2-135m", "smollm2")
DEFAULT_MODEL = "local:smollm2-135m"


class UnknownModel(ValueError):
    pass


class ProviderRegistry:
    def __init__(self, default_model: str | None = None) -> None:
        self.default_model = default_model or DEFAULT_MODEL
        self._providers: dict[str, Provider] = {}
        self._local_model: Any = None
        self._lock = anyio.Lock()

    def validate(self, model: str) -> str:
        """Canonical model string, or UnknownModel with a message a user can act on."""
        if model in LOCAL_ALIASES:
            return DEFAULT_MODEL
        scheme, sep, rest = model.partition(":")
        if scheme == "scripted" and sep:
            return model
        raise UnknownModel(
            f"unknown model {model!r}: use {DEFAULT_MODEL!r} or 'scripted:<script>'"
        )

    def available(self) -> list[dict[str, Any]]:
        return [
            {
                "modelId": DEFAULT_MODEL,
                "name": "SmolLM2 135M Instruct (embedded, CPU)",
                "description": "Runs locally through llama.cpp; no API key needed.",
            }
        ]

    def default_max_tokens(self, model: str) -> int | None:
        return 512 if model == DEFAULT_MODEL else None

    async def get(self, model: str) -> Provider:
        model = self.validate(model)
        provider = self._providers.get(model)
        if provider is not None:
            return provider
        async with self._lock:
            provider = self._providers.get(model)
            if provider is None:
                provider = self._create(model)
                self._providers[model] = provider
        return provider

    def _create(self, model: str) -> Provider:
        if model == DEFAULT_MODEL:
            from .local import LocalModel, LocalProvider

            if self._local_model is None:
                self._local_model = LocalModel()
            return LocalProvider(self._local_model)
        from .scripted import ScriptedProvider

        return ScriptedProvider(model.partition(":")[2])

    async def aclose(self) -> None:
        for p in self._providers.values():
            await p.aclose()
        self._providers.clear()
