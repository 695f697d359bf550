"""The server's requests to the client, on pygls' request book: each answer settles its
own request, a client's error arrives as ClientError whatever its shape, and a
withdrawn request stops its waiter at once while its late answer (or an answer to no
request at all) settles nothing and raises nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from threadline.engine.link import ClientError
from threadline.rpc.pending import PendingRequests


class Client:
    """What the server wrote, and a way to answer it."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.book = PendingRequests(self.sent.append)
        self.withdrawn: list[str] = []

    def ask(self, method: str, params: Any) -> asyncio.Task[Any]:
        return asyncio.ensure_future(self.book.ask(method, params, self.withdrawn.append))

    async def request(self, n: int) -> dict[str, Any]:
        """The n-th request written (1-based), once it is."""
        for _ in range(500):
            if len(self.sent) >= n:
                return self.sent[n - 1]
            await asyncio.sleep(0.01)
        raise AssertionError(f"only {len(self.sent)} requests written")


async def test_an_answer_settles_its_own_request() -> None:
    client = Client()
    first = client.ask("fs/read_text_file", {"path": "/a"})
    second = client.ask("fs/read_text_file", {"path": "/b"})
    one, two = await client.request(1), await client.request(2)
    assert one["method"] == "fs/read_text_file" and one["params"] == {"path": "/a"}
    assert one["id"] != two["id"]
    client.book.settle({"jsonrpc": "2.0", "id": two["id"], "result": {"content": "b"}})
    assert await second == {"content": "b"}
    assert not first.done()
    client.book.settle({"jsonrpc": "2.0", "id": one["id"]})  # no result: null
    assert await first is None


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            {"code": -32001, "message": "no such file", "data": {"path": "/a"}},
            (-32001, "no such file", {"path": "/a"}),
        ),
        ({"code": "bad", "message": "no", "data": 1}, (-32603, "no", 1)),
        ({"code": 7}, (7, "", None)),
    ],
)
async def test_an_error_answer_fails_with_the_clients_error(
    error: dict[str, Any], expected: tuple[int, str, Any]
) -> None:
    client = Client()
    waiting = client.ask("tool/call", {})
    msg_id = (await client.request(1))["id"]
    client.book.settle({"jsonrpc": "2.0", "id": msg_id, "error": error})
    with pytest.raises(ClientError) as err:
        await waiting
    assert (err.value.code, err.value.message, err.value.data) == expected


async def test_a_withdrawn_request_stops_at_once_and_ignores_its_late_answer() -> None:
    client = Client()
    waiting = client.ask("session/request_permission", {})
    msg_id = (await client.request(1))["id"]
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert client.withdrawn == [msg_id]
    late = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32800, "message": "cancelled"}}
    client.book.settle(late)  # must not raise
    client.book.settle({"jsonrpc": "2.0", "id": "tl-999", "result": None})  # never sent
    following = client.ask("fs/read_text_file", {"path": "/c"})  # the book still works
    next_id = (await client.request(2))["id"]
    client.book.settle({"jsonrpc": "2.0", "id": next_id, "result": {"content": "c"}})
    assert await following == {"content": "c"}


def test_an_answer_before_any_request_is_dropped() -> None:
    PendingRequests(lambda _: None).settle({"jsonrpc": "2.0", "id": "tl-1", "result": None})


async def test_a_request_naming_a_file_that_is_not_utf8_is_written_whole() -> None:
    client = Client()
    path = "/ws/caf\udce9.txt"  # what os.fsdecode makes of a Latin-1 file name
    waiting = client.ask("fs/read_text_file", {"path": path})
    assert (await client.request(1))["params"] == {"path": path}
    waiting.cancel()
