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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

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
    messages: Sequence[Msg], price_of: PriceOf, pending: tuple[str, int, int] | None = None
) -> float | None:
    """The cost of ``messages``' answers, plus ``pending`` (model, input and output
    tokens of a call whose answer is not stored yet); None when nothing was priced."""
    return CostTally().cost(messages, price_of, pending)


@dataclass(slots=True)
class CostTally:
    """Each model's tokens summed over a transcript's answers, counted on from where
    the last count stopped: the cost shown after each model call of a long session
    costs the answers since, not the whole history (counted again only when the
    history was cut since, by a rewind). Prices are applied to the sums, so a price
    changed in threadline.toml applies to every answer at once."""

    counted: int = 0
    last_id: str | None = None
    tokens: dict[str, tuple[int, int]] = field(default_factory=dict[str, tuple[int, int]])

    def cost(
        self,
        messages: Sequence[Msg],
        price_of: PriceOf,
        pending: tuple[str, int, int] | None = None,
    ) -> float | None:
        """`session_cost` of ``messages`` (a transcript that only grows, or is cut)."""
        n = self.counted
        if n > len(messages) or (n and messages[n - 1].get("messageId") != self.last_id):
            self.counted, self.tokens = 0, {}  # cut since: a prefix kept, then new ones
        for m in messages[self.counted :]:
            if m.get("role") == "assistant" and m.get("usage") is not None:
                self._add(str(m.get("model") or ""), *_tokens(m.get("usage")))
        self.counted = len(messages)
        self.last_id = messages[-1].get("messageId") if messages else None
        sums = dict(self.tokens)
        if pending is not None:
            model, input_tokens, output_tokens = pending
            before = sums.get(model, (0, 0))
            sums[model] = (before[0] + input_tokens, before[1] + output_tokens)
        total: float | None = None
        for model, (input_tokens, output_tokens) in sums.items():
            price = price_of(model)
            if price is not None:
                total = (total or 0.0) + price.of(input_tokens, output_tokens)
        return total

    def _add(self, model: str, input_tokens: int, output_tokens: int) -> None:
        before = self.tokens.get(model, (0, 0))
        self.tokens[model] = (before[0] + input_tokens, before[1] + output_tokens)

    def copy(self) -> CostTally:
        return CostTally(self.counted, self.last_id, dict(self.tokens))
