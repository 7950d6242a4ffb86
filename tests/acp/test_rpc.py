"""The connection (SPEC §14.1): the SDK's ``Connection`` on dsh's frame layer — framing, error shapes,
malformed input, ordering, lifetime."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.acp import (
    FrameTransport,
    MemoryTransport,
    RpcServer,
    encode_frame,
    internal_error,
    invalid_params,
    memory_transport_pair,
    unexpected_error,
)
from dsh.kernel import Logger
from tests.acp.client import AcpTestClient, RpcResponseError
from tests.acp.helpers import CWD, bridge_stack


# ------------------------------------------------------------- through the bridge
async def test_malformed_input_gets_the_right_error_and_the_connection_keeps_serving(tmp_path: Path) -> None:
    """(§14.1) not JSON, not JSON-RPC, unknown method: the right error each time, then business as usual"""
    async with bridge_stack(tmp_path) as stack:
        client = stack.client
        client.write_raw("this is not json")
        client.write_raw("")
        client.write_raw("   ")
        client.write_raw("[1, 2]")
        client.write_raw('{"id": 5, "method": "initialize", "params": {}}')
        client.write_raw('{"jsonrpc": "2.0", "id": 6, "method": 7}')
        client.write_raw('{"jsonrpc": "2.0", "id": {"x": 1}, "method": "initialize"}')
        client.write_raw('{"jsonrpc": "2.0", "id": true, "method": "initialize"}')
        client.write_raw('{"jsonrpc": "2.0", "id": 8}')
        client.write_raw('{"jsonrpc": "2.0", "id": 9, "result": {}}')  # a response: the bridge sent no request
        client.write_raw('{"jsonrpc": "2.0", "method": "session/unknown_note", "params": {}}')
        client.write_raw('{"jsonrpc": "2.0", "method": "session/cancel", "params": {"nope": 1}}')
        client.write_raw('{"jsonrpc": "2.0", "id": "str-id", "method": "session/set_mode", "params": {}}')
        await client.wait_for(lambda c: len(c.frames) >= 8)
        assert client.raw_lines[:8] == [
            '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
            '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}',
            '{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request"}}',
            '{"jsonrpc":"2.0","id":6,"error":{"code":-32600,"message":"Invalid Request"}}',
            '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}',
            '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}',
            '{"jsonrpc":"2.0","id":8,"error":{"code":-32600,"message":"Invalid Request"}}',
            '{"jsonrpc":"2.0","id":"str-id","error":{"code":-32601,"message":"Method not found",'
            '"data":{"method":"session/set_mode"}}}',
        ]
        # still serving
        assert (await client.initialize())["protocolVersion"] == 1
        assert len(client.frames) == 9


async def test_hostile_frames_are_answered_and_never_end_the_connection(tmp_path: Path) -> None:
    """(issue) 1,000 '[' (the decoder's recursion limit), NaN / Infinity ids, a cancel sent as a request"""
    async with bridge_stack(tmp_path) as stack:
        client = stack.client
        client.write_raw("[" * 1000)
        client.write_raw("[" * 100_000 + "]" * 100_000)
        client.write_raw('{"jsonrpc": "2.0", "id": NaN, "method": "initialize", "params": {}}')
        client.write_raw('{"jsonrpc": "2.0", "id": Infinity, "method": "initialize", "params": {}}')
        client.write_raw('{"jsonrpc": "2.0", "id": -Infinity, "method": "initialize", "params": {}}')
        client.write_raw('{"jsonrpc": "2.0", "id": 1.5, "method": "session/cancel", "params": {"sessionId": "x"}}')
        client.write_raw('{"jsonrpc": "2.0", "id": 7, "method": "session/cancel", "params": {}}')
        client.write_raw('{"jsonrpc": "2.0", "id": 8, "method": "session/cancel", "params": {"sessionId": "gone"}}')
        await client.wait_for(lambda c: len(c.frames) >= 8)
        invalid = '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}'
        assert client.raw_lines[:6] == [
            '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
            '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
            invalid,
            invalid,
            invalid,
            '{"jsonrpc":"2.0","id":1.5,"error":{"code":-32602,"message":"Invalid params: unknown session: x"}}',
        ]
        assert client.frames[6]["id"] == 7
        assert client.frames[6]["error"]["code"] == -32602
        assert client.frames[7]["error"] == {"code": -32602, "message": "Invalid params: unknown session: gone"}
        session_id = await client.new_session(CWD)
        assert client.raw_lines[-1].startswith('{"jsonrpc":"2.0","id":1,')
        await client.request("session/cancel", {"sessionId": session_id})  # a live session: answered null
        assert client.raw_lines[-1] == '{"jsonrpc":"2.0","id":2,"result":null}'
        assert (await client.initialize())["protocolVersion"] == 1
        assert len(client.frames) == 11


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("initialize", {}),
        ("initialize", None),
        ("initialize", [1]),
        ("authenticate", {}),
        ("session/new", {"cwd": 5, "mcpServers": []}),
        ("session/new", {"cwd": CWD}),
        ("session/load", {"cwd": CWD, "mcpServers": []}),
        ("session/prompt", {"sessionId": "s", "prompt": [{"type": "video", "uri": "x"}]}),
        ("session/prompt", {"sessionId": "s", "prompt": [{"type": "text"}]}),
        ("session/prompt", {"sessionId": "s"}),
    ],
)
async def test_wrong_params_get_invalid_params_with_structured_data(tmp_path: Path, method: str, params: Any) -> None:
    """(§14.1) schema validation failures are -32602 ``Invalid params`` with the problems under data.errors"""
    async with bridge_stack(tmp_path) as stack:
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.request(method, params)
        assert caught.value.code == -32602
        assert caught.value.message == "Invalid params"
        errors = caught.value.error["data"]["errors"]
        assert errors
        assert all("loc" in item and "msg" in item for item in errors)


# ------------------------------------------------------------- the connection alone
Handler = Callable[[Any], Awaitable[Any]]


class Peer:
    """A connection under test and a client on the other end."""

    def __init__(self, connection: RpcServer, client: AcpTestClient, server: MemoryTransport) -> None:
        self.connection = connection
        self.client = client
        self.server = server


def make_peer(
    requests: dict[str, Handler] | None = None,
    notifications: dict[str, Callable[[Any], None]] | None = None,
    on_close: Callable[[], Awaitable[None]] | None = None,
    transport: Any = None,
) -> Peer:
    server, client_end = memory_transport_pair()
    connection = RpcServer(
        server if transport is None else transport(server),
        requests=requests or {},
        notifications=notifications or {},
        logger=Logger("acp-test"),
        on_close=on_close,
    )
    client = AcpTestClient(client_end)
    client.start()
    return Peer(connection, client, server)


@pytest.fixture
async def peers() -> AsyncIterator[list[Peer]]:
    made: list[Peer] = []
    yield made
    for peer in made:
        await peer.client.aclose()
        await peer.connection.wait_closed()


async def test_frames_are_written_in_the_order_they_are_issued(peers: list[Peer]) -> None:
    """(§14.1) one ordered writer: notifications issued before a response precede it"""

    async def chatty(params: Any) -> Any:
        for index in range(3):
            peer.connection.notify("test/note", {"n": index})
        await asyncio.sleep(0)
        peer.connection.notify("test/note", {"n": 3})
        return {"done": True}

    peer = make_peer({"chatty": chatty})
    peers.append(peer)
    peer.connection.start()
    peer.connection.start()  # idempotent
    assert await peer.client.request("chatty", {}) == {"done": True}
    assert [frame.get("params", {}).get("n") for frame in peer.client.frames] == [0, 1, 2, 3, None]
    assert peer.client.raw_lines[0] == '{"jsonrpc":"2.0","method":"test/note","params":{"n":0}}'


async def test_deliberate_and_unexpected_errors_have_their_exact_shapes(peers: list[Peer]) -> None:
    """(§14.1) RequestError keeps its text and has no data; other exceptions become a bare Internal error"""

    async def deliberate(params: Any) -> Any:
        raise internal_error("on purpose")

    async def plain(params: Any) -> Any:
        raise RuntimeError("something broke")

    async def json_message(params: Any) -> Any:
        raise RuntimeError('{"reason": "structured"}')

    async def empty(params: Any) -> Any:
        raise RuntimeError()

    async def not_json(params: Any) -> Any:
        return {"value": float("nan")}

    async def not_serializable(params: Any) -> Any:
        return {"value": object()}

    peer = make_peer(
        {
            "deliberate": deliberate,
            "plain": plain,
            "json": json_message,
            "empty": empty,
            "nan": not_json,
            "object": not_serializable,
        }
    )
    peers.append(peer)
    peer.connection.start()
    errors = {}
    for method in ("deliberate", "plain", "json", "empty", "nan", "object"):
        with pytest.raises(RpcResponseError) as caught:
            await peer.client.request(method, {})
        errors[method] = caught.value.error
    assert errors["deliberate"] == {"code": -32603, "message": "Internal error: on purpose"}
    assert errors["plain"] == {"code": -32603, "message": "Internal error", "data": {"details": "something broke"}}
    assert errors["json"] == {"code": -32603, "message": "Internal error", "data": {"reason": "structured"}}
    assert errors["empty"] == {"code": -32603, "message": "Internal error", "data": {}}
    assert errors["nan"]["message"] == "Internal error"
    assert "JSON" in errors["nan"]["data"]["details"]
    assert errors["object"]["message"] == "Internal error"
    assert "not JSON serializable" in errors["object"]["data"]["details"]


def test_request_error_helpers_and_frame_encoding() -> None:
    """(§14.1) helpers build the reference texts; frames are compact UTF-8 with escaped lone surrogates"""
    assert invalid_params("bad").to_error_obj() == {"code": -32602, "message": "Invalid params: bad", "data": None}
    assert unexpected_error(ValueError("42")).data == 42
    assert encode_frame({"b": 1, "a": "ü\ud800"}) == '{"b":1,"a":"ü\\ud800"}'
    with pytest.raises(ValueError):
        encode_frame({"x": float("inf")})


async def test_notification_failures_are_logged_never_answered(
    peers: list[Peer], caplog: pytest.LogCaptureFixture
) -> None:
    """(§14.1) a raising notification handler is logged; nothing is written back"""
    seen: list[Any] = []

    def note(params: Any) -> None:
        seen.append(params)
        raise RuntimeError("note broke")

    async def ping(params: Any) -> Any:
        return "pong"

    peer = make_peer({"ping": ping}, {"note": note})
    peers.append(peer)
    peer.connection.start()
    with caplog.at_level(logging.WARNING):
        peer.client.notify("note", {"a": 1})
        assert await peer.client.request("ping") == "pong"
    assert seen == [{"a": 1}]
    assert "acp: notification note failed: note broke" in caplog.text
    assert [frame["id"] for frame in peer.client.frames] == [1]


async def test_end_of_input_answers_the_handlers_in_flight_then_runs_on_close_then_closes_the_transport(
    peers: list[Peer],
) -> None:
    """(issue) lifetime: at end of input the requests in flight finish and are answered, then teardown"""
    order: list[str] = []
    entered = asyncio.Event()
    release = asyncio.Event()

    async def slow(params: Any) -> Any:
        entered.set()
        await release.wait()
        order.append("handler done")
        return "late"

    async def on_close() -> None:
        order.append("on_close")

    peer = make_peer({"slow": slow}, on_close=on_close)
    peers.append(peer)
    was_closed = peer.connection.closed
    assert was_closed is False
    peer.connection.start()
    pending = peer.client.send("slow", {})
    await entered.wait()
    peer.client.close()
    for _ in range(10):
        await asyncio.sleep(0)
    assert order == []  # the request in flight holds the teardown back
    release.set()
    await peer.connection.wait_closed()
    assert peer.connection.closed
    assert order == ["handler done", "on_close"]
    assert (await pending)["result"] == "late"
    assert peer.server.closed


async def test_aclose_during_the_end_of_input_drain_runs_on_close_at_once(peers: list[Peer]) -> None:
    """(issue) aclose while end of input waits for a handler: teardown runs first, the handler is still answered"""
    order: list[str] = []
    entered = asyncio.Event()
    release = asyncio.Event()

    async def slow(params: Any) -> Any:
        entered.set()
        await release.wait()
        order.append("handler done")
        return "late"

    async def on_close() -> None:
        order.append("on_close")
        release.set()

    peer = make_peer({"slow": slow}, on_close=on_close)
    peers.append(peer)
    peer.connection.start()
    pending = peer.client.send("slow", {})
    await entered.wait()
    peer.client.close()
    for _ in range(10):
        await asyncio.sleep(0)
    await peer.connection.aclose()
    assert order == ["on_close", "handler done"]
    assert (await pending)["result"] == "late"


async def test_aclose_stops_reading_and_finishes_like_end_of_input(peers: list[Peer]) -> None:
    """(§14.1) aclose: reading stops at once, on_close runs, the transport is closed"""
    closed: list[bool] = []

    async def on_close() -> None:
        closed.append(True)

    idle = make_peer(on_close=on_close)
    await idle.connection.aclose()  # never started: nothing to do
    await idle.connection.wait_closed()
    assert closed == []
    assert not idle.connection.closed
    idle.server.close()  # nobody served it: release the client
    peers.append(idle)
    peer = make_peer(on_close=on_close)
    peers.append(peer)
    peer.connection.start()
    await peer.connection.aclose()
    assert closed == [True]
    assert peer.server.closed


class Faulty:
    """A server transport that fails where told to."""

    def __init__(self, inner: MemoryTransport, *, read: bool = False, write: bool = False, close: bool = False) -> None:
        self.inner = inner
        self.fail_read = read
        self.fail_write = write
        self.fail_close = close

    async def read_line(self) -> str | None:
        if self.fail_read:
            raise OSError("read exploded")
        return await self.inner.read_line()

    def write_line(self, line: str) -> None:
        if self.fail_write:
            raise ConnectionError("write exploded")
        self.inner.write_line(line)

    async def aclose(self) -> None:
        await self.inner.aclose()
        if self.fail_close:
            raise OSError("close exploded")


async def test_transport_failures_are_logged_and_end_the_connection_cleanly(
    peers: list[Peer], caplog: pytest.LogCaptureFixture
) -> None:
    """(§14.1) a failing read ends the connection; failing writes and closes are logged"""
    teardowns: list[str] = []

    async def teardown() -> None:
        teardowns.append("ran")
        raise RuntimeError("teardown exploded")

    with caplog.at_level(logging.WARNING):
        reader = make_peer(on_close=teardown, transport=lambda inner: Faulty(inner, read=True, close=True))
        peers.append(reader)
        reader.connection.start()
        await reader.connection.wait_closed()
        assert teardowns == ["ran"]
        assert "acp: reading from the client failed; closing the connection: read exploded" in caplog.text
        assert "acp: connection-close teardown failed: teardown exploded" in caplog.text
        assert "acp: closing the transport failed: close exploded" in caplog.text

        async def ping(params: Any) -> Any:
            return "pong"

        writer = make_peer({"ping": ping}, transport=lambda inner: Faulty(inner, write=True))
        peers.append(writer)
        writer.connection.start()
        unanswered = writer.client.send("ping", {})
        writer.client.write_raw("not json")
        writer.client.close()
        await writer.connection.wait_closed()
        with pytest.raises(ConnectionError, match="closed the connection"):
            await unanswered  # its answer could not be written
        assert caplog.text.count("acp: could not send a response: write exploded") == 2  # the answer, the error
        with pytest.raises(ConnectionError):
            writer.connection.notify("session/update", {})
    assert json.loads(encode_frame({"ok": True})) == {"ok": True}


async def test_a_connection_not_started_sends_nothing_and_a_stopped_frame_layer_reads_nothing() -> None:
    """(§14.1) notify / request before start raise; a notification JSON cannot hold raises; stop ends reading"""
    server, client_end = memory_transport_pair()
    idle = RpcServer(server, requests={}, notifications={}, logger=Logger("acp-test"))
    with pytest.raises(ConnectionError, match="has not started"):
        idle.notify("session/update", {})
    with pytest.raises(ConnectionError, match="has not started"):
        await idle.request("fs/read_text_file", {})
    frames = FrameTransport(server, Logger("acp-test"))
    with pytest.raises(ValueError):
        frames.write({"jsonrpc": "2.0", "method": "session/update", "params": {"x": float("nan")}})
    client_end.write_line('{"jsonrpc":"2.0","method":"session/cancel","params":{}}')
    frames.stop()
    frames.stop()  # idempotent
    assert await frames.receive() is None
    assert await frames.receive() is None
    assert frames.ended.is_set()


async def test_an_update_the_schema_refuses_is_logged_and_not_sent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """(issue 15) every session/update is an ``acp.schema.SessionNotification``; one that is not never reaches the client"""
    async with bridge_stack(tmp_path) as stack:
        session_id = await stack.session()
        before = len(stack.client.frames)
        with caplog.at_level(logging.WARNING):
            stack.bridge._notify({"sessionId": session_id, "update": {"sessionUpdate": "no_such_update"}})
        assert "acp: a session/update the ACP schema refuses was not sent" in caplog.text
        assert (await stack.client.initialize())["protocolVersion"] == 1
        assert len(stack.client.frames) == before + 1
