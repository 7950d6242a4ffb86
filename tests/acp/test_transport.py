"""Line transports: the in-memory pair and stdio over real pipes and regular files."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.acp import StdioTransport, memory_transport_pair
from dsh.acp import transport as transport_module
from dsh.acp.transport import OVERLONG


async def test_memory_pair_carries_lines_both_ways_and_signals_end_of_input() -> None:
    """what one end writes the other reads, in order; close ends the peer's input for good"""
    server, client = memory_transport_pair()
    client.write_line("one")
    client.write_line("two")
    server.write_line("back")
    assert [await server.read_line(), await server.read_line()] == ["one", "two"]
    assert await client.read_line() == "back"
    was_closed = client.closed
    assert was_closed is False
    await client.aclose()
    client.close()  # idempotent
    assert client.closed
    assert await server.read_line() is None
    assert await server.read_line() is None  # end of input stays the answer
    with pytest.raises(ConnectionError, match="closed"):
        client.write_line("late")
    server.write_line("the server can still answer")
    assert await client.read_line() == "the server can still answer"


@pytest.fixture
def pipes() -> Iterator[list[int]]:
    """File descriptors to close after the test (those the test did not close itself)."""
    opened: list[int] = []
    yield opened
    for fd in opened:
        os.close(fd)


def make_pipe(opened: list[int]) -> tuple[int, int]:
    read, write = os.pipe()
    opened.extend([read, write])
    return read, write


def close_fd(opened: list[int], fd: int) -> None:
    """Close ``fd`` now and forget it (a closed number may be reused by anything)."""
    opened.remove(fd)
    os.close(fd)


async def test_stdio_over_pipes_reads_lines_and_writes_frames(pipes: list[int]) -> None:
    """pipes are driven by the event loop; lines come back without their newline; output is flushed on close"""
    in_read, in_write = make_pipe(pipes)
    out_read, out_write = make_pipe(pipes)
    transport = await StdioTransport.open(in_read, out_write)
    os.write(in_write, b'{"a":1}\r\n' + "ü\n".encode() + b"\xff\xfe\npartial")
    close_fd(pipes, in_write)
    assert await transport.read_line() == '{"a":1}'
    assert await transport.read_line() == "ü"
    assert await transport.read_line() == "\ufffd\ufffd"
    assert await transport.read_line() == "partial"
    assert await transport.read_line() is None
    transport.write_line('{"b":"é"}')
    transport.write_line("second")
    await transport.aclose()
    await transport.aclose()  # idempotent
    with pytest.raises(ConnectionError):
        transport.write_line("after close")
    close_fd(pipes, out_write)  # our duplicate is closed; close the original too
    with open(out_read, "rb", closefd=False) as produced:
        assert produced.read() == '{"b":"é"}\nsecond\n'.encode()


async def test_a_line_longer_than_the_read_limit_is_dropped_and_reading_goes_on(
    pipes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """(issue) an overlong line never ends the connection: it reads as OVERLONG (not JSON), then the next line"""
    monkeypatch.setattr(transport_module, "READ_LIMIT", 16)
    in_read, in_write = make_pipe(pipes)
    _, out_write = make_pipe(pipes)
    transport = await StdioTransport.open(in_read, out_write)
    os.write(in_write, b"x" * 20 + b"\n" + b"y" * 200 + b"\n" + b'{"a":1}\n' + b"z" * 100)
    close_fd(pipes, in_write)
    assert await transport.read_line() == OVERLONG
    assert await transport.read_line() == OVERLONG
    assert await transport.read_line() == '{"a":1}'
    assert await transport.read_line() == OVERLONG
    assert await transport.read_line() is None
    with pytest.raises(ValueError):
        json.loads(OVERLONG)  # the connection answers it with a parse error
    await transport.aclose()


async def test_an_overlong_line_arriving_in_pieces_is_skipped_piece_by_piece(
    pipes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """(issue) the overlong line is never held whole: each buffered piece is dropped until its newline"""
    monkeypatch.setattr(transport_module, "READ_LIMIT", 16)
    in_read, in_write = make_pipe(pipes)
    _, out_write = make_pipe(pipes)
    transport = await StdioTransport.open(in_read, out_write)
    reading = asyncio.ensure_future(transport.read_line())
    for piece in (b"a" * 100, b"b" * 100, b"c" * 100):
        os.write(in_write, piece)
        for _ in range(20):
            await asyncio.sleep(0)
    assert not reading.done()
    os.write(in_write, b"\nnext\n")
    assert await reading == OVERLONG
    assert await transport.read_line() == "next"
    await transport.aclose()


async def test_stdio_write_fails_once_the_reader_went_away(pipes: list[int]) -> None:
    """a vanished reader surfaces as ConnectionError on a later write, not as a crash"""
    in_read, _in_write = make_pipe(pipes)
    out_read, out_write = make_pipe(pipes)
    transport = await StdioTransport.open(in_read, out_write)
    close_fd(pipes, out_read)
    close_fd(pipes, out_write)
    transport.write_line("into the void")  # EPIPE: the pipe transport closes itself
    with pytest.raises(ConnectionError, match="closed"):
        transport.write_line("again")
    await transport.aclose()


async def test_stdio_over_regular_files_reads_and_writes_directly(tmp_path: Path) -> None:
    """regular files cannot be watched by the loop: they are read and written directly"""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(b'{"x":1}\n{"y":2}')
    frames = tmp_path / "frames.jsonl"
    with requests.open("rb") as source, frames.open("wb") as sink:
        transport = await StdioTransport.open(source.fileno(), sink.fileno())
        assert await transport.read_line() == '{"x":1}'
        assert await transport.read_line() == '{"y":2}'
        assert await transport.read_line() is None
        transport.write_line("out")
        await transport.aclose()
        with pytest.raises(ConnectionError, match="closed"):
            transport.write_line("late")
    assert frames.read_bytes() == b"out\n"


async def test_stdio_defaults_to_this_process_stdin_and_stdout(
    pipes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """without descriptors it serves sys.stdin / sys.stdout (through duplicates it may close)"""
    in_read, in_write = make_pipe(pipes)
    out_read, out_write = make_pipe(pipes)
    with open(in_read, "rb", closefd=False) as fake_in, open(out_write, "wb", closefd=False) as fake_out:
        monkeypatch.setattr("sys.stdin", fake_in)
        monkeypatch.setattr("sys.stdout", fake_out)
        transport = await StdioTransport.open()
    os.write(in_write, b"hello\n")
    assert await transport.read_line() == "hello"
    transport.write_line("world")
    await transport.aclose()
    assert os.read(out_read, 100) == b"world\n"
    # the process's own descriptors stay usable: only the transport's duplicates were closed
    os.write(out_write, b"still open\n")
    assert os.read(out_read, 100) == b"still open\n"
    os.write(in_write, b"x")
    assert os.read(in_read, 1) == b"x"
