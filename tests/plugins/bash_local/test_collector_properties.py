"""Properties of ``OutputCollector`` over random chunk streams (hypothesis)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.plugins.bash_local import OutputCollector

chunks = st.lists(st.binary(min_size=0, max_size=40), max_size=30)
caps = st.integers(min_value=1, max_value=64)


@settings(max_examples=150, deadline=None)
@given(stream=chunks, cap=caps)
def test_memory_stays_bounded_and_the_spill_holds_the_whole_stream(stream: list[bytes], cap: int) -> None:
    """after every push: retained <= cap, the retained bytes are the stream's tail; the spill is the stream"""
    with tempfile.TemporaryDirectory() as directory:
        collector = OutputCollector(cap, "stdout", directory)
        seen = b""
        for chunk in stream:
            collector.push(chunk)
            seen += chunk
            assert collector.retained_bytes <= cap
            assert collector.total_bytes == len(seen)
        tail = seen[len(seen) - collector.retained_bytes :]
        out = collector.finalize()
        assert out.text == tail.decode("utf-8", "replace")
        assert out.truncated == (len(seen) > cap)
        if len(seen) > cap:
            assert out.spill_path is not None
            assert Path(out.spill_path).read_bytes() == seen
        else:
            assert out.spill_path is None


@settings(max_examples=150, deadline=None)
@given(stream=chunks, cap=caps, text=st.text(max_size=40))
def test_incremental_reads_deliver_every_byte_once_when_nothing_is_dropped(
    stream: list[bytes], cap: int, text: str
) -> None:
    """reading after every push (without loss) reassembles the stream exactly, split characters included"""
    data = b"".join(stream) + text.encode()
    pieces = [data[i : i + 3] for i in range(0, len(data), 3)]
    collector = OutputCollector(max(cap, len(data), 1), "stdout", None)
    offset = 0
    received = ""
    for piece in pieces:
        collector.push(piece)
        read = collector.read_from(offset)
        assert read.lossy is False
        received += read.text
        offset = read.next_offset
    collector.finalize()
    received += collector.read_from(offset).text
    assert received == data.decode("utf-8", "replace")
