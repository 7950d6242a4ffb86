"""SPEC §10 SSE parsing: ``parse_sse`` over byte iterators."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.adapters.deepseek import DONE, SseParser, parse_sse
from dsh.core.errors import LlmError
from tests.adapters.deepseek.helpers import collect, source


async def parse(*reads: bytes) -> list[str]:
    return await collect(parse_sse(source(reads)))


async def parse_closed(*reads: bytes) -> tuple[list[str], LlmError]:
    """Payloads yielded before the parser raised, and the error it raised."""
    seen: list[str] = []
    with pytest.raises(LlmError) as caught:
        async for payload in parse_sse(source(reads)):
            seen.append(payload)
    return seen, caught.value


def split(data: bytes, *cuts: int) -> list[bytes]:
    points = [0, *sorted(cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(points)]


STREAM = b'data: {"a":1}\n\ndata: {"b":"two"}\n\ndata: [DONE]\n\n'


# -------------------------------------------------------------------------- parseSse
async def test_parses_simple_events_and_the_DONE_sentinel() -> None:
    """parses simple events and the DONE sentinel"""
    assert await parse(STREAM) == ['{"a":1}', '{"b":"two"}', DONE]
    assert DONE == "[DONE]"


async def test_handles_events_split_across_reads_at_arbitrary_positions() -> None:
    """handles events split across reads at arbitrary positions"""
    expected = ['{"a":1}', '{"b":"two"}', DONE]
    for i in range(len(STREAM) + 1):
        for j in range(i, len(STREAM) + 1, 7):
            assert await parse(*split(STREAM, i, j)) == expected
    assert await parse(*[bytes([byte]) for byte in STREAM]) == expected


async def test_handles_multi_byte_UTF_8_split_across_reads() -> None:
    """handles multi-byte UTF-8 split across reads"""
    data = "data: héllo 🌍 世界\n\ndata: [DONE]\n\n".encode()
    emoji = data.index("🌍".encode())
    for cut in range(emoji, emoji + 5):
        assert await parse(data[:cut], data[cut:]) == ["héllo 🌍 世界", DONE]
    assert await parse(*[bytes([byte]) for byte in data]) == ["héllo 🌍 世界", DONE]


async def test_tolerates_CRLF_line_endings() -> None:
    """tolerates CRLF line endings"""
    assert await parse(b"data: one\r\n\r\ndata: two\r\n\r\ndata: [DONE]\r\n\r\n") == ["one", "two", DONE]
    mixed = b"data: one\n\r\ndata: two\r\n\ndata: [DONE]\n\n"
    assert await parse(mixed) == ["one", "two", DONE]


async def test_joins_multi_data_events_with_newlines_SSE_spec() -> None:
    """joins multi-data events with newlines (SSE spec)"""
    assert await parse(b"data: line1\ndata: line2\n\ndata: [DONE]\n\n") == ["line1\nline2", DONE]


async def test_ignores_comments_and_non_data_fields() -> None:
    """ignores comments and non-data fields"""
    stream = b": keep-alive\nevent: message\nid: 7\nretry: 100\ndata: x\n\n: ping\n\ndata: [DONE]\n\n"
    assert await parse(stream) == ["x", DONE]


async def test_skips_blocks_without_data_fields() -> None:
    """skips blocks without data fields"""
    assert await parse(b"event: ping\n\n\n\nid: 1\n\ndata: y\n\ndata: [DONE]\n\n") == ["y", DONE]


async def test_preserves_data_lines_without_the_optional_space() -> None:
    """preserves data lines without the optional space"""
    assert await parse(b"data:tight\n\ndata:  two spaces\n\ndata:[DONE]\n\n") == ["tight", " two spaces", DONE]


async def test_parses_several_events_from_one_read() -> None:
    """parses several events from one read"""
    many = b"".join(b"data: %d\n\n" % n for n in range(50)) + b"data: [DONE]\n\n"
    assert await parse(many) == [str(n) for n in range(50)] + [DONE]


async def test_flushes_a_final_un_terminated_DONE_at_stream_end() -> None:
    """flushes a final un-terminated DONE at stream end"""
    assert await parse(b"data: a\n\n", b"data: [DONE]") == ["a", DONE]
    assert await parse(b"data: a\n\ndata: [DONE]\n") == ["a", DONE]


async def test_throws_STREAM_CLOSED_when_the_stream_ends_without_DONE() -> None:
    """throws STREAM_CLOSED when the stream ends without DONE"""
    seen, error = await parse_closed(b"data: a\n\ndata: b\n\n")
    assert seen == ["a", "b"]
    assert error.code == "STREAM_CLOSED"
    assert str(error) == "SSE stream ended without [DONE]"


async def test_throws_STREAM_CLOSED_for_an_empty_stream() -> None:
    """throws STREAM_CLOSED for an empty stream"""
    for reads in ((), (b"",), (b"\n\n",)):
        seen, error = await parse_closed(*reads)
        assert seen == []
        assert error.code == "STREAM_CLOSED"


async def test_throws_STREAM_CLOSED_for_a_mid_event_close() -> None:
    """throws STREAM_CLOSED for a mid-event close"""
    seen, error = await parse_closed(b'data: {"a":1}\n\ndata: {"choices":[{"del')
    assert seen == ['{"a":1}', '{"choices":[{"del']
    assert error.code == "STREAM_CLOSED"


async def test_stops_yielding_after_DONE_even_when_more_data_follows() -> None:
    """stops yielding after DONE even when more data follows"""
    reads_taken: list[bytes] = []

    async def reads() -> AsyncIterator[bytes]:
        for data in (b"data: a\n\ndata: [DONE]\n\ndata: after\n\n", b"data: never read\n\n"):
            reads_taken.append(data)
            yield data

    assert await collect(parse_sse(reads())) == ["a", DONE]
    assert len(reads_taken) == 1
    assert await parse(b"data: [DONE]\n\ndata: late\n\n") == [DONE]


# ----------------------------------------------------------------- parseSse edge branches
async def test_handles_a_lone_CR_terminated_data_line() -> None:
    """handles a lone CR-terminated data line"""
    assert await parse(b"data: a\r\n\r\n", b"data: [DONE]\r") == ["a", DONE]
    assert await parse(b"data: x\ry\n\ndata: [DONE]\n\n") == ["x\ry", DONE]


async def test_strips_CR_from_non_data_field_lines_too() -> None:
    """strips CR from non-data field lines too"""
    stream = b"id: 1\r\nevent: e\r\n: note\r\ndata: y\r\n\r\nevent: only\r\n\r\ndata: [DONE]\r\n\r\n"
    assert await parse(stream) == ["y", DONE]


async def test_treats_bare_data_lines_as_empty_payload_entries() -> None:
    """treats bare "data:" lines as empty payload entries"""
    assert await parse(b"data:\ndata: x\n\ndata:\n\ndata: [DONE]\n\n") == ["\nx", "", DONE]


# ------------------------------------------------------------------------- beyond spec
async def test_replaces_invalid_UTF_8_instead_of_failing() -> None:
    """invalid UTF-8 bytes decode to U+FFFD instead of failing the stream"""
    assert await parse(b"data: a\xff\xfeb\n\ndata: [DONE]\n\n") == ["a\ufffd\ufffdb", DONE]


async def test_errors_of_the_byte_source_propagate_unchanged() -> None:
    """an error raised by the byte source reaches the consumer as it is"""

    async def failing() -> AsyncIterator[bytes]:
        yield b"data: a\n\n"
        raise ConnectionResetError("gone")

    seen: list[str] = []
    with pytest.raises(ConnectionResetError, match="gone"):
        async for payload in parse_sse(failing()):
            seen.append(payload)
    assert seen == ["a"]


SEPARATORS = ["\n\n", "\r\n\r\n", "\n\r\n", "\r\n\n"]
PAYLOAD = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=12)


@given(
    payloads=st.lists(PAYLOAD.filter(lambda p: p != DONE), max_size=6),
    separators=st.lists(st.sampled_from(SEPARATORS), min_size=7, max_size=7),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6),
)
async def test_any_split_of_the_bytes_parses_like_one_read(
    payloads: list[str], separators: list[str], cuts: list[int]
) -> None:
    """property: however the bytes are cut into reads, the payloads are the same"""
    events = [*payloads, DONE]
    data = "".join(f"data: {p}{separators[i]}" for i, p in enumerate(events)).encode()
    reads = split(data, *(min(cut, len(data)) for cut in cuts))
    assert await parse(*reads) == events


# ------------------------------------------------------------------------ SseParser
def test_the_incremental_parser_returns_the_payloads_each_piece_completes() -> None:
    """SseParser.feed returns what each piece completes; a blank line cut after "\\n\\r" waits for its "\\n\""""
    parser = SseParser()
    assert parser.feed(b"data: a\n\r") == []
    assert parser.feed(b"\ndata: b") == ["a"]
    assert parser.feed(b"\r\n\r\ndata: [DONE]\n\ndata: after\n\n") == ["b", DONE]
    assert parser.done


def test_the_incremental_parser_ignores_everything_after_DONE() -> None:
    """once [DONE] was returned, feed and finish return nothing"""
    parser = SseParser()
    assert parser.feed(b"data: [DONE]\n\n") == [DONE]
    assert parser.feed(b"data: late\n\n") == []
    assert parser.finish() == []
    assert parser.done


def test_finishing_the_parser_gives_the_final_unterminated_event() -> None:
    """finish() parses what is left; done only if it was [DONE]"""
    ended_early = SseParser()
    assert ended_early.feed(b"data: a\n\ndata: b") == ["a"]
    assert ended_early.finish() == ["b"]
    assert not ended_early.done
    blank = SseParser()
    assert blank.feed(b": comment\n") == []
    assert blank.finish() == []
    assert not blank.done
    done = SseParser()
    assert done.feed(b"data: [DONE]") == []
    assert done.finish() == [DONE]
    assert done.done
