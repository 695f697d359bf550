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


def test_a_tally_counts_each_message_once_and_sums_as_session_cost() -> None:
    """A turn of a long session looks only at the messages added since the last one;
    the sum is `session_cost`'s, exactly, and counted again for another list (a rewind)
    or a changed price."""
    from threadline.engine.cost import CostTally

    prices = dict(PRICES)
    history = [answer("big", 1_000_000, 7), answer("small", 3, 1_000_000)]
    tally = CostTally()
    pending = ("big", 3, 4)
    assert tally.cost(history, prices.get, pending) == session_cost(history, PRICES.get, pending)
    history.append(answer("big", 5, 6))
    before = list(history)
    assert tally.cost(history, prices.get, pending) == session_cost(history, PRICES.get, pending)
    history[0] = answer("big", 9_000_000, 0)  # never done to a message: shows it is not read again
    assert tally.cost(history, prices.get) == session_cost(before, PRICES.get)
    rewound = history[:1]
    assert tally.cost(rewound, prices.get) == session_cost(rewound, PRICES.get) == 27.0
    prices["big"] = Price(input=100.0, output=100.0)
    assert tally.cost(rewound, prices.get) == session_cost(rewound, prices.get) == 900.0
