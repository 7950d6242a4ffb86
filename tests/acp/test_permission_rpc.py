"""Requests from the bridge to the client (``RpcServer.request`` on the SDK connection), the channel of the ACP answerer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsh.acp import INTERNAL_ERROR, RequestError, RpcServer, memory_transport_pair
from dsh.kernel import Logger
from tests.acp.client import AcpTestClient


@pytest.fixture
async def peer() -> AsyncIterator[tuple[RpcServer, AcpTestClient]]:
    server, client_end = memory_transport_pair()
    connection = RpcServer(server, requests={}, notifications={}, logger=Logger("acp-test"))
    connection.start()
    client = AcpTestClient(client_end)
    client.start()
    yield connection, client
    await client.aclose()
    await connection.wait_closed()


async def asked(client: AcpTestClient, count: int = 1) -> dict[str, Any]:
    await client.wait_for(lambda c: sum(1 for f in c.frames if "method" in f) >= count)
    return [frame for frame in client.frames if "method" in frame][count - 1]


def respond(client: AcpTestClient, request_id: Any, **body: Any) -> None:
    client.write_raw(json.dumps({"jsonrpc": "2.0", "id": request_id, **body}))


async def test_a_request_gets_its_result_and_ids_count_up(peer: tuple[RpcServer, AcpTestClient]) -> None:
    connection, client = peer
    first = asyncio.ensure_future(connection.request("x/one", {"a": 1}))
    second = asyncio.ensure_future(connection.request("x/two", None))
    one, two = await asked(client, 1), await asked(client, 2)
    assert one == {"jsonrpc": "2.0", "id": 0, "method": "x/one", "params": {"a": 1}}
    assert two["id"] == 1
    respond(client, 1, result="second")
    respond(client, 0, result={"ok": True})
    assert await first == {"ok": True}
    assert await second == "second"


@pytest.mark.parametrize(
    ("error", "code", "message", "data"),
    [
        ({"code": -32000, "message": "no", "data": {"why": 1}}, -32000, "no", {"why": 1}),
        ({"code": "x", "message": 5}, INTERNAL_ERROR, "the client answered with an error", None),
        ("not an object", INTERNAL_ERROR, "the client answered with an error", None),
    ],
)
async def test_an_error_response_raises_request_error(
    peer: tuple[RpcServer, AcpTestClient], error: Any, code: int, message: str, data: Any
) -> None:
    connection, client = peer
    pending = asyncio.ensure_future(connection.request("x/fail", {}))
    respond(client, (await asked(client))["id"], error=error)
    with pytest.raises(RequestError) as caught:
        await pending
    assert (caught.value.code, str(caught.value)) == (code, message)
    assert caught.value.to_error_obj() == {"code": code, "message": message, "data": data}


async def test_stray_responses_are_ignored(
    peer: tuple[RpcServer, AcpTestClient], caplog: pytest.LogCaptureFixture
) -> None:
    connection, client = peer
    caplog.set_level("DEBUG")
    pending = asyncio.ensure_future(connection.request("x/wait", {}))
    request_id = (await asked(client))["id"]
    respond(client, 99, result="nobody asked")
    respond(client, None, result="no id")
    client.write_raw('{"jsonrpc": "2.0", "id": {"x": 1}, "result": 1}')
    respond(client, request_id, result="mine")
    assert await pending == "mine"
    assert "ignoring a response to id {'x': 1}: no request waits for it" in caplog.text


async def test_cancelling_the_caller_forgets_the_request(peer: tuple[RpcServer, AcpTestClient]) -> None:
    connection, client = peer
    pending = asyncio.ensure_future(connection.request("x/slow", {}))
    request_id = (await asked(client))["id"]
    pending.cancel()
    await asyncio.wait({pending})
    assert pending.cancelled()
    respond(client, request_id, result="late")  # ignored
    again = asyncio.ensure_future(connection.request("x/next", {}))
    respond(client, (await asked(client, 2))["id"], result="fine")
    assert await again == "fine"


async def test_the_end_of_the_connection_fails_pending_and_later_requests() -> None:
    server, client_end = memory_transport_pair()
    connection = RpcServer(server, requests={}, notifications={}, logger=Logger("acp-test"))
    connection.start()
    client = AcpTestClient(client_end)
    client.start()
    pending = asyncio.ensure_future(connection.request("x/never", {}))
    await asked(client)
    await client.aclose()
    with pytest.raises(ConnectionError, match="Connection closed"):
        await pending
    with pytest.raises(ConnectionError, match="Connection closed"):
        await connection.request("x/after", {})
    await connection.wait_closed()


async def test_an_unknown_method_is_still_method_not_found(peer: tuple[RpcServer, AcpTestClient]) -> None:
    _connection, client = peer
    reply = await client.send("x/unknown", {})
    assert reply["error"] == {"code": -32601, "message": "Method not found", "data": {"method": "x/unknown"}}
