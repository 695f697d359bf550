"""A session's cost summed from its stored answers (`engine.cost.session_cost`)."""

from __future__ import annotations

import pytest

from threadline.engine.cost import session_cost
from threadline.userconfig import Price

PRICES = {"big": Price(3.0, 15.0), "small": Price(0.5, 1.0)}


def answer(model: str, inputs: int, outputs: int) -> dict[str, object]:
    usage = {"inputTokens": inputs, "outputTokens": outputs, "totalTokens": inputs + outputs}
    return {"role": "assistant", "model": model, "usage": usage}


def test_each_answer_at_its_own_models_price_plus_the_pending_call() -> None:
    history = [
        {"role": "user", "content": []},
        answer("big", 1_000_000, 100_000),  # 3 + 1.5
        answer("free", 5_000_000, 5_000_000),  # no price: nothing
        answer("small", 2_000_000, 1_000_000),  # 1 + 1
    ]
    assert session_cost(history, PRICES.get) == pytest.approx(6.5)
    assert session_cost(history, PRICES.get, pending=("small", 0, 1_000_000)) == pytest.approx(7.5)


def test_no_priced_answer_is_no_cost() -> None:
    assert session_cost([answer("free", 10, 10)], PRICES.get) is None
    assert session_cost([], PRICES.get) is None
    assert session_cost([], PRICES.get, pending=("big", 0, 0)) == 0.0
