"""The provider interface: one small set of semantic stream events for every model.

The turn loop never sees a vendor's wire format; each provider turns its stream into
these events. Thought signatures and provider-specific fields travel in ``extra`` so
they can be sent back byte-exact on later turns.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThoughtDelta:
    text: str
    signature: str | None = None
    extra: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call's arguments, for clients that show calls as they form."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments_fragment: str = ""


@dataclass(frozen=True, slots=True)
class ToolCallFinal:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one model call (the stream's last event but ``Done``), or the sum
    of a turn's calls: the one shape every provider reports and the engine adds up.

    ``input_tokens`` is the whole prompt, cache reads and writes included (they are
    also counted apart), so input plus output is what the call took of the context.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    def wire(self) -> dict[str, int]:
        """The protocol's ``Usage`` (``threadline_protocol.messages``) as it goes on the
        wire and into the store: the one place the two spellings meet."""
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cachedReadTokens": self.cache_read_tokens,
            "cachedWriteTokens": self.cache_write_tokens,
            "totalTokens": self.total_tokens,
        }


FinishReason = Literal["stop", "length", "tool_calls", "refusal"]


@dataclass(frozen=True, slots=True)
class Done:
    finish_reason: FinishReason = "stop"


@dataclass(frozen=True, slots=True)
class ProviderError:
    """A failure the provider could not recover from (after its own retries)."""

    reason: str
    message: str
    status: int | None = None
    retryable: bool = False


@dataclass(frozen=True, slots=True)
class StatusNotice:
    """Provider-side waiting (retry backoff, rate limit) the client should see."""

    message: str
    retry_in: float | None = None


ProviderEvent = (
    TextDelta
    | ThoughtDelta
    | ToolCallDelta
    | ToolCallFinal
    | Usage
    | Done
    | ProviderError
    | StatusNotice
)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolOfferLimits:
    """How many tools a model is offered per call: a property of the model. A small
    model chooses well among a few tools and stops answering plain questions when
    given many; a large one chooses well among a modest list, worse as it grows."""

    top_k: int
    """Most tools offered by relevance (besides ``alwaysOffer`` and found ones)."""
    offer_all_up_to: int = 0
    """Every tool is offered, unranked, while there are at most this many."""
    plain_when_irrelevant: bool = True
    """When no tool is relevant, offer none (not even ``find_tools``)."""
    close_to_best: float = 0.0
    """Leave out relevant tools scoring below this fraction of the best one: a small
    model given a clear winner and two also-rans often calls an also-ran."""


SMALL_MODEL_TOOLS = ToolOfferLimits(top_k=3, close_to_best=0.5)
LARGE_MODEL_TOOLS = ToolOfferLimits(top_k=20, offer_all_up_to=30, plain_when_irrelevant=False)


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image sent to the model with a message: base64 bytes, their type, the size
    in pixels and what the image costs in tokens with this model (`ImageSupport`)."""

    mime_type: str
    data: str
    width: int
    height: int
    tokens: int


@dataclass(frozen=True, slots=True)
class ImageSupport:
    """Whether a model sees images, and where: a property of the provider and model
    (``images`` in ``threadline.toml`` overrides the default)."""

    sees: bool = False
    in_tool_results: bool = False
    """Images may stand inside a tool result (Anthropic); else they are sent in a user
    message after the results (`engine.mutations.MultimodalToolResult`)."""
    cost: Literal["anthropic", "openai"] = "openai"
    """Whose documented formula prices an image in tokens."""
    max_bytes: int | None = None
    max_side: int | None = None
    """The largest image the API takes (bytes, pixels a side); a larger one is sent as
    a placeholder rather than failing the request."""


TEXT_ONLY = ImageSupport()


@dataclass(slots=True)
class ChatMessage:
    """A provider-neutral message of the compiled request.

    ``role`` is system/user/assistant/tool; assistant messages may carry tool calls
    and thoughts; tool messages carry ``tool_call_id``. ``ephemeral`` messages are
    sent to the model but never written to history.
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCallFinal] = field(default_factory=list)
    thoughts: list[dict[str, Any]] = field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False
    ephemeral: bool = False
    images: list[ImagePart] = field(default_factory=list[ImagePart])
    """Images sent with the message (user messages, and tool results for a model whose
    `ImageSupport.in_tool_results`), after its text."""


@dataclass(slots=True)
class ChatRequest:
    messages: list[ChatMessage]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: Literal["auto", "none"] = "auto"
    purpose: Literal["turn", "compaction"] = "turn"
    """Why the engine asks: a turn's model call, or a compaction summary."""


def system_first(messages: list[ChatMessage]) -> list[ChatMessage]:
    """``messages`` with every later system message folded into the first one.

    The engine sends the per-call tool section as a system message after the history,
    where a model that keeps its evaluated prompt (the embedded one) reuses the history
    before it. APIs and chat templates that take system text only at the start (many
    refuse it anywhere else) get it where they always did: appended to the first."""
    if not messages or messages[0].role != "system":
        return messages
    later = [m for m in messages[1:] if m.role == "system"]
    if not later:
        return messages
    text = "\n\n".join(m.content for m in [messages[0], *later] if m.content)
    first = ChatMessage("system", text)
    return [first, *(m for m in messages[1:] if m.role != "system")]


class Provider(Protocol):
    """A model backend. ``stream`` yields events until ``Done`` or ``ProviderError``."""

    @property
    def model_id(self) -> str: ...

    @property
    def context_window(self) -> int: ...

    def stream(self, request: ChatRequest) -> AsyncIterator[ProviderEvent]: ...

    def count_tokens(self, request: ChatRequest) -> int: ...

    async def aclose(self) -> None: ...


def rough_token_count(request: ChatRequest) -> int:
    """Fallback estimate (4 characters a token) for providers without a tokenizer."""
    chars = sum(
        len(m.content) + sum(len(str(c.arguments)) for c in m.tool_calls) for m in request.messages
    )
    chars += sum(len(t.description) + len(str(t.parameters)) for t in request.tools)
    return chars // 4 + 4 * len(request.messages) + image_tokens(request)


def image_tokens(request: ChatRequest) -> int:
    """What the request's images cost, as each was priced for its model."""
    return sum(i.tokens for m in request.messages for i in m.images)
