"""``read_lines``: stdin lines on a worker thread, without blocking the loop, stopping cleanly."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from dsh.plugins.ui_stdio import read_lines
from dsh.plugins.ui_stdio.lines import Item, post, read_descriptor


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    ends = {read_end, write_end}
    yield read_end, write_end
    for end in ends:
        try:
            os.close(end)
        except OSError:
            pass


def reader_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("dsh read_lines")]


async def collect(lines: AsyncIterator[str]) -> list[str]:
    return [line async for line in lines]


async def test_yields_each_line_then_the_unterminated_last_one(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.write(write_end, b"one\ntwo\r\n\nthree")
    os.close(write_end)
    assert await collect(read_lines(read_end)) == ["one", "two\r", "", "three"]
    assert reader_threads() == []


async def test_empty_input_yields_nothing(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.close(write_end)
    assert await collect(read_lines(read_end)) == []


async def test_a_character_split_across_reads_is_decoded_whole(pipe: tuple[int, int]) -> None:
    """UTF-8 is decoded incrementally: the first read ends inside "é"."""
    read_end, write_end = pipe
    os.write(write_end, b"first\ncaf\xc3")  # one read takes all of it, up to half a character
    lines = read_lines(read_end)
    assert await anext(lines) == "first"
    os.write(write_end, b"\xa9 au lait\n")
    assert await anext(lines) == "café au lait"
    os.close(write_end)
    assert await collect(lines) == []


async def test_invalid_utf8_becomes_replacement_characters(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.write(write_end, b"bad \xff byte\ntail \xe2\x82")
    os.close(write_end)
    assert await collect(read_lines(read_end)) == ["bad \ufffd byte", "tail \ufffd"]


async def test_does_not_block_the_event_loop_while_waiting(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    lines = read_lines(read_end)
    pending = asyncio.ensure_future(anext(lines))
    ticks = 0
    while ticks < 5:  # the loop keeps running while the reader waits for input
        await asyncio.sleep(0)
        ticks += 1
    assert not pending.done()
    os.write(write_end, b"now\n")
    assert await pending == "now"
    await lines.aclose()
    assert reader_threads() == []


async def test_cancelling_the_reader_stops_and_joins_its_thread(pipe: tuple[int, int]) -> None:
    read_end, _write_end = pipe
    lines = read_lines(read_end)
    task = asyncio.ensure_future(anext(lines))
    await asyncio.sleep(0)
    assert len(reader_threads()) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert reader_threads() == []
    os.fstat(read_end)  # the caller's descriptor stays open


async def test_closing_after_some_lines_stops_the_thread(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.write(write_end, b"a\nb\n")
    lines = read_lines(read_end)
    assert await anext(lines) == "a"
    await lines.aclose()
    assert reader_threads() == []


async def test_a_read_error_is_raised_from_the_iterator(tmp_path: Path) -> None:
    directory = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(IsADirectoryError):
            await collect(read_lines(directory))
    finally:
        os.close(directory)
    assert reader_threads() == []


def test_post_reports_a_closed_loop() -> None:
    loop = asyncio.new_event_loop()
    loop.close()
    received: list[Item] = []
    assert post(loop, received.append, "line") is False
    assert received == []


async def test_post_hands_the_item_to_the_loop() -> None:
    received: list[Item] = []
    assert post(asyncio.get_running_loop(), received.append, "line") is True
    await asyncio.sleep(0)
    assert received == ["line"]


def test_the_worker_stops_when_the_consumer_is_gone(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    wake_read, wake_write = os.pipe()
    try:
        os.write(write_end, b"a\nb\nc")
        os.close(write_end)
        delivered: list[Item] = []

        def deliver(item: Item) -> bool:
            delivered.append(item)
            return False  # the loop is gone after the first line

        read_descriptor(read_end, wake_read, deliver)
        assert delivered == ["a"]
    finally:
        os.close(wake_read)
        os.close(wake_write)


def test_the_worker_stops_when_the_consumer_is_gone_at_the_last_line(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    wake_read, wake_write = os.pipe()
    try:
        os.write(write_end, b"last")
        os.close(write_end)
        delivered: list[Item] = []

        def deliver(item: Item) -> bool:
            delivered.append(item)
            return False

        read_descriptor(read_end, wake_read, deliver)
        assert delivered == ["last"]
    finally:
        os.close(wake_read)
        os.close(wake_write)


def test_the_worker_returns_at_once_when_woken(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    wake_read, wake_write = os.pipe()
    try:
        os.write(write_end, b"unread\n")
        os.write(wake_write, b"\0")
        delivered: list[Item] = []

        def deliver(item: Item) -> bool:
            delivered.append(item)
            return True

        read_descriptor(read_end, wake_read, deliver)
        assert delivered == []
    finally:
        os.close(wake_read)
        os.close(wake_write)
