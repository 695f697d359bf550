"""The server's requests to the client: a withdrawn one leaves nothing behind, and its
late answer, or an answer to no request at all, settles nothing."""

from __future__ import annotations

import pytest

from threadline.engine.link import ClientError
from threadline.rpc.pending import PendingRequests


async def test_an_answer_settles_its_request_only() -> None:
    pending = PendingRequests()
    first, answer = pending.open()
    second, other = pending.open()
    assert first != second
    pending.settle(first, {"jsonrpc": "2.0", "id": first, "result": {"content": "x"}})
    assert await answer == {"content": "x"}
    assert not other.done()
    assert len(pending) == 1


async def test_an_error_answer_fails_with_the_clients_error() -> None:
    pending = PendingRequests()
    msg_id, answer = pending.open()
    pending.settle(msg_id, {"id": msg_id, "error": {"code": "bad", "message": "no", "data": 1}})
    with pytest.raises(ClientError) as err:
        await answer
    assert (err.value.code, err.value.message, err.value.data) == (-32603, "no", 1)


async def test_a_withdrawn_request_leaves_nothing_and_ignores_its_late_answer() -> None:
    pending = PendingRequests()
    msg_id, answer = pending.open()
    answer.cancel()
    pending.withdraw(msg_id)
    assert len(pending) == 0
    pending.settle(msg_id, {"id": msg_id, "result": None})  # late: must not raise
    pending.settle("tl-999", {"id": "tl-999", "result": None})  # never sent
    assert answer.cancelled()
