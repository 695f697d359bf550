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


def test_a_tally_counts_only_the_answers_since_and_again_after_a_cut() -> None:
    """The cost shown after each model call of a long session counts the answers
    since the last one (a turn's cost does not grow with the history) and is the
    whole history's cost at every step, also after a rewind cut it and it grew again."""
    from threadline.engine.cost import CostTally

    def numbered(i: int, model: str, inputs: int, outputs: int) -> dict[str, object]:
        return {**answer(model, inputs, outputs), "messageId": f"m{i}"}

    history = [numbered(i, ("big", "small", "free")[i % 3], 1000 * i, 100 * i) for i in range(9)]
    tally = CostTally()
    for end in range(len(history) + 1):
        shown = tally.cost(history[:end], PRICES.get, pending=("small", 10, 10))
        assert shown == pytest.approx(session_cost(history[:end], PRICES.get, ("small", 10, 10)))
        assert tally.counted == end
    seen: list[str] = []

    def price_of(model: str) -> Price | None:
        seen.append(model)
        return PRICES.get(model)

    grown = [*history, numbered(9, "big", 7, 7)]
    tally.cost(grown, price_of)
    assert tally.counted == 10 and sorted(seen) == ["big", "free", "small"]
    cut = [*history[:4], numbered(10, "small", 5_000_000, 0)]  # a rewind kept 4, then one new
    assert tally.cost(cut, PRICES.get) == pytest.approx(session_cost(cut, PRICES.get))
    copy = tally.copy()
    copy.cost([*cut, numbered(11, "big", 1_000_000, 0)], PRICES.get)
    assert tally.counted == 5 and copy.counted == 6
