"""The connection protocol with a fake transport (the network is faked): read flow control and state."""

from __future__ import annotations

import asyncio

from dsh.adapters.http.connection import READ_HIGH_WATER, HttpConnection


class FakeTransport(asyncio.Transport):
    """Records what the protocol asks of it; writes are kept, nothing goes anywhere."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.calls: list[str] = []
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")

    def is_closing(self) -> bool:
        return self.closing

    def abort(self) -> None:
        self.closing = True
        self.calls.append("abort")


def connection() -> tuple[HttpConnection, FakeTransport]:
    conn = HttpConnection(asyncio.get_running_loop(), ("http", "h", 80, None), read_timeout=5.0, write_timeout=5.0)
    transport = FakeTransport()
    conn.connection_made(transport)
    return conn, transport


async def test_reading_pauses_above_the_high_water_mark_and_resumes_on_take() -> None:
    """(extra) more than READ_HIGH_WATER unread body bytes pause the socket; taking them resumes it"""
    conn, transport = connection()
    conn.begin(b"GET / HTTP/1.1\r\n\r\n", b"", url="http://h/")
    assert bytes(transport.written) == b"GET / HTTP/1.1\r\n\r\n"
    size = 3 * READ_HIGH_WATER
    conn.data_received(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % size)
    piece = b"x" * (READ_HIGH_WATER // 2)
    for _ in range(3):
        conn.data_received(piece)
    assert transport.calls == ["pause"]
    conn.data_received(piece)  # still paused: no second pause
    assert transport.calls == ["pause"]
    assert conn.take() == piece * 4
    assert transport.calls == ["pause", "resume"]
    conn.data_received(piece)
    assert conn.take() == piece
    assert transport.calls == ["pause", "resume"]


async def test_a_large_body_is_written_in_two_parts() -> None:
    """(extra) a body of 64 KiB or more is written after the head instead of being copied onto it"""
    conn, transport = connection()
    body = b"b" * 65536
    conn.begin(b"PUT / HTTP/1.1\r\ncontent-length: 65536\r\n\r\n", body, url="http://h/")
    assert bytes(transport.written).endswith(b"\r\n\r\n" + body)


async def test_state_is_visible_in_the_repr() -> None:
    """(extra) the repr tells the pool key, the state and the request count"""
    conn, transport = connection()
    assert repr(conn) == "<HttpConnection ('http', 'h', 80, None) idle requests=0>"
    conn.begin(b"GET / HTTP/1.1\r\n\r\n", b"", url="http://h/")
    assert repr(conn) == "<HttpConnection ('http', 'h', 80, None) active requests=1>"
    conn.close()
    conn.close()
    assert transport.calls == ["abort"]
    assert repr(conn) == "<HttpConnection ('http', 'h', 80, None) closed requests=1>"
