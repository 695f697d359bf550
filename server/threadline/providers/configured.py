"""Providers built from an options record: the model id and context window are the
options', and the HTTP ones hold one vendor SDK client, made on first use.

The Anthropic and OpenAI-compatible providers differ in wire formats, not in how they
own a client, check a key or answer "is it reachable?": that part lives here once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, Self, TypeVar

import anyio

from ..userconfig import ModelEntry, Secret
from .policies.failures import failure_from_exception
from .sdk_stream import MissingKey


class ModelOptions(Protocol):
    """What every provider's options say about the model."""

    @property
    def model_id(self) -> str: ...

    @property
    def context_window(self) -> int: ...


class ApiOptions(ModelOptions, Protocol):
    """Options of a provider that calls a vendor API with a key."""

    @property
    def model(self) -> str: ...

    @property
    def api_key(self) -> Secret | None: ...


@dataclass(frozen=True, slots=True)
class EndpointOptions:
    """What every vendor endpoint of the user's config takes, whatever its wire format:
    the model (as the server names it, and as Threadline does), where and with which
    key to call, the window. A vendor's options add their own fields (and defaults)."""

    model: str
    """The model name the server expects."""
    model_id: str
    """Threadline's model string (``openai:gpt-4o-mini`` or a configured name)."""
    base_url: str | None = None
    api_key: Secret | None = None
    api_key_env: str | None = None
    context_window: int = 128_000
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    connect_timeout: float = 10.0

    @classmethod
    def configured(cls, entry: ModelEntry, context_window: int, **own: Any) -> Self:
        """The options of a configured model: the endpoint's fields from its provider
        entry and model options (``context_window`` when the config names no window),
        ``own`` the vendor's."""
        p = entry.provider
        return cls(
            model=entry.model,
            model_id=entry.id,
            base_url=p.base_url,
            api_key=p.api_key,
            api_key_env=p.api_key_env,
            context_window=int(entry.option("context_window") or context_window),
            headers=dict(p.headers),
            connect_timeout=float(entry.option("connect_timeout", 10.0)),
            **own,
        )


_O = TypeVar("_O", bound=ModelOptions)
_A = TypeVar("_A", bound=ApiOptions)


class ConfiguredProvider(Generic[_O]):
    """A provider whose identity and window come from its options."""

    def __init__(self, options: _O) -> None:
        self.options = options

    @property
    def model_id(self) -> str:
        return self.options.model_id

    @property
    def context_window(self) -> int:
        return self.options.context_window


class SdkProvider(ConfiguredProvider[_A], ABC):
    """A provider that talks through one vendor SDK client, made (and the SDK imported)
    on first use, so a sidecar that never calls the vendor never pays for the import."""

    def __init__(self, options: _A) -> None:
        super().__init__(options)
        self._client: Any = None

    @abstractmethod
    def _new_client(self) -> Any:
        """The SDK's async client for these options; :class:`MissingKey` without a key
        the server needs."""

    @abstractmethod
    async def _served_models(self, client: Any) -> list[str]:
        """The ids of the models the API lists (a free call)."""

    @abstractmethod
    def _listed(self, ids: list[str]) -> str:
        """How a successful listing reads to the user."""

    def client(self) -> Any:
        """The SDK client, created on first use."""
        if self._client is None:
            self._client = self._new_client()
        return self._client

    def _secrets(self) -> list[str]:
        key = self.options.api_key
        return [key.reveal()] if key else []

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with anyio.move_on_after(2, shield=True):
                await client.close()

    async def reachable(self, timeout: float = 5.0) -> tuple[bool, str]:
        """Whether the API answers its model listing with this key (spends no tokens)."""
        try:
            client = self.client()
            with anyio.fail_after(timeout):
                ids = await self._served_models(client)
        except MissingKey as exc:
            return False, str(exc)
        except TimeoutError:
            return False, f"no answer within {timeout:g} s"
        except Exception as exc:
            failure = failure_from_exception(exc, streamed=False, secrets=self._secrets())
            status = f"HTTP {failure.status}: " if failure.status else ""
            return False, f"{status}{failure.message}"[:300]
        return True, self._listed(ids)
