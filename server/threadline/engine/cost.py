"""A session's cost: its answers' tokens at their models' prices, summed.

Every stored answer names the model that made it and the tokens its call took
(``model``, ``usage``), so the cost is made from the history whenever it is shown: it
survives restarts, counts each answer at its own model's price when the session's
model changed, and needs nothing stored beyond the messages. A model without a
``price`` (threadline.toml) adds nothing; a session none of whose answers came from a
priced model has no cost at all (``None``: ACP's ``usage_update.cost`` is then left
out rather than claimed to be zero).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..userconfig import Price
from .mutations import Msg

CURRENCY = "USD"
"""Prices in threadline.toml are US dollars per million tokens."""

PriceOf = Callable[[str], Price | None]


def _count(usage: dict[str, object], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) else 0


def _tokens(usage: object) -> tuple[int, int]:
    """A stored ``usage`` (`providers.base.Usage.wire`): input and output tokens."""
    if not isinstance(usage, dict):
        return 0, 0
    return _count(usage, "inputTokens"), _count(usage, "outputTokens")  # pyright: ignore[reportUnknownArgumentType]


def session_cost(
    messages: Iterable[Msg], price_of: PriceOf, pending: tuple[str, int, int] | None = None
) -> float | None:
    """The cost of ``messages``' answers, plus ``pending`` (model, input and output
    tokens of a call whose answer is not stored yet); None when nothing was priced."""
    prices: dict[str, Price | None] = {}
    total: float | None = None
    calls = [
        (str(m.get("model") or ""), *_tokens(m.get("usage")))
        for m in messages
        if m.get("role") == "assistant" and m.get("usage") is not None
    ]
    for model, input_tokens, output_tokens in [*calls, *([pending] if pending else [])]:
        if model not in prices:
            prices[model] = price_of(model)
        price = prices[model]
        if price is not None:
            total = (total or 0.0) + price.of(input_tokens, output_tokens)
    return total


class CostTally:
    """`session_cost` of a growing transcript, each message looked at once: a turn of
    a 100,000-message session priced every answer again otherwise (half of what a
    prompt cost at 20,000 messages, measured). The same sum in the same order; counted
    again from the start when the messages are another list (a rewind, a restored
    fold parsed) or a model's price changed."""

    __slots__ = ("_counted", "_messages", "_prices", "_total")

    def __init__(self) -> None:
        self._messages: list[Msg] | None = None
        self._counted = 0
        self._prices: dict[str, Price | None] = {}
        self._total: float | None = None

    def cost(
        self, messages: list[Msg], price_of: PriceOf, pending: tuple[str, int, int] | None = None
    ) -> float | None:
        if (
            messages is not self._messages
            or len(messages) < self._counted
            or any(price_of(model) != price for model, price in self._prices.items())
        ):
            self._messages, self._counted, self._prices, self._total = messages, 0, {}, None
        for m in messages[self._counted :]:
            if m.get("role") == "assistant" and m.get("usage") is not None:
                self._add(str(m.get("model") or ""), *_tokens(m.get("usage")), price_of)
        self._counted = len(messages)
        total = self._total
        if pending is not None:
            total, self._total = self._add(*pending, price_of), total
        return total

    def _add(
        self, model: str, input_tokens: int, output_tokens: int, price_of: PriceOf
    ) -> float | None:
        if model not in self._prices:
            self._prices[model] = price_of(model)
        price = self._prices[model]
        if price is not None:
            self._total = (self._total or 0.0) + price.of(input_tokens, output_tokens)
        return self._total
