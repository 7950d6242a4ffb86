"""The incremental response parser: status line, header fields, 1xx, body framing, errors, any split."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.adapters.http import Headers, ReadError, RemoteProtocolError, ResponseParser
from dsh.adapters.http.parse import MAX_CHUNK_LINE, MAX_HEAD


def parse(*pieces: bytes, head_only: bool = False, connect: bool = False, eof: bool = False) -> ResponseParser:
    parser = ResponseParser()
    parser.start(head_only=head_only, connect=connect)
    for piece in pieces:
        parser.feed(piece)
    if eof:
        parser.feed_eof()
    return parser


def body_of(parser: ResponseParser) -> bytes:
    return b"".join(parser.body)


# ------------------------------------------------------------------ status line
@pytest.mark.parametrize(
    ("line", "version", "status", "reason"),
    [
        (b"HTTP/1.1 200 OK", "HTTP/1.1", 200, "OK"),
        (b"HTTP/1.0 404 Not Found", "HTTP/1.0", 404, "Not Found"),
        (b"HTTP/1.1 204", "HTTP/1.1", 204, ""),
        (b"HTTP/1.1 599 ", "HTTP/1.1", 599, ""),
        (b"HTTP/1.1 200 \xe7a va", "HTTP/1.1", 200, "\xe7a va"),
    ],
)
def test_reads_the_status_line(line: bytes, version: str, status: int, reason: str) -> None:
    """(extra) HTTP/1.0|1.1 <3 digits> [<reason>], the reason decoded as Latin-1"""
    parser = parse(line + b"\r\ncontent-length: 0\r\n\r\n")
    assert parser.head is not None
    assert (parser.head.http_version, parser.head.status, parser.head.reason) == (version, status, reason)
    assert parser.complete
    assert repr(parser.head) == f"ResponseHead({version!r}, {status!r}, {reason!r}, Headers([('content-length', '0')]))"


@pytest.mark.parametrize(
    "line",
    [
        b"garbage",
        b"HTTP/2 200 OK",
        b"HTTP/1.1 20 OK",
        b"HTTP/1.1 2000 OK",
        b"HTTP/1.1 abc OK",
        b"HTTP/1.1 200OK",
        b"HTTP/1.1  200 OK",
        b"HTTP/1.1 \xb2\xb2\xb2 OK",
        b"http/1.1 200 OK",
        b"",
    ],
)
def test_rejects_a_garbage_status_line(line: bytes) -> None:
    """(extra) anything but HTTP/1.x NNN is a RemoteProtocolError naming the line"""
    with pytest.raises(RemoteProtocolError, match="invalid status line"):
        parse(line + b"\r\n\r\n")


def test_rejects_a_status_code_below_100() -> None:
    """(extra) 0xx is no status"""
    with pytest.raises(RemoteProtocolError, match="invalid status code 99"):
        parse(b"HTTP/1.1 099 Odd\r\n\r\n")


def test_skips_interim_responses_to_the_final_one() -> None:
    """(extra) 100 Continue and 103 Early Hints (with fields) are read and dropped"""
    parser = parse(
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n"
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
    )
    assert parser.head is not None
    assert parser.head.status == 200
    assert "link" not in parser.head.headers
    assert body_of(parser) == b"ok"


def test_rejects_switching_protocols() -> None:
    """(extra) a 101 the client never asked for is an error"""
    with pytest.raises(RemoteProtocolError, match="101"):
        parse(b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n")


# --------------------------------------------------------------------- headers
def test_header_fields_keep_order_and_ignore_case_on_lookup() -> None:
    """(extra) get joins repeats with ', ', get_all keeps each value, items keep the server's spelling"""
    parser = parse(
        b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-Empty:\r\nset-cookie: b=2\r\n"
        b"Content-Length:   0  \r\nX-Tab:\tv\t\r\n\r\n"
    )
    assert parser.head is not None
    headers = parser.head.headers
    assert headers.get("SET-COOKIE") == "a=1, b=2"
    assert headers.get_all("set-cookie") == ["a=1", "b=2"]
    assert headers.get("x-empty") == ""
    assert headers.get("content-length") == "0"
    assert headers.get("x-tab") == "v"
    assert headers.get("missing") is None
    assert headers.get("missing", "default") == "default"
    assert headers.get_all("missing") == []
    assert headers.items() == [
        ("Set-Cookie", "a=1"),
        ("X-Empty", ""),
        ("set-cookie", "b=2"),
        ("Content-Length", "0"),
        ("X-Tab", "v"),
    ]
    assert "x-EMPTY" in headers
    assert 42 not in headers
    assert len(headers) == 5
    assert headers == Headers(headers.items())
    assert headers != headers.items()
    assert repr(Headers([("a", "b")])) == "Headers([('a', 'b')])"


def test_accepts_bare_line_feeds_and_folded_lines() -> None:
    """(extra) LF-only line ends; an obsolete line folding becomes one space"""
    parser = parse(b"HTTP/1.1 200 OK\nx-long: one\n  two\n\tthree\nx-fold-empty:\n more\ncontent-length: 1\n\nz")
    assert parser.head is not None
    assert parser.head.headers.get("x-long") == "one two three"
    assert parser.head.headers.get("x-fold-empty") == "more"
    assert body_of(parser) == b"z"


@pytest.mark.parametrize(
    "line",
    [b"no colon here", b"name : value", b": no name", b"tab\t: value"],
)
def test_rejects_malformed_header_lines(line: bytes) -> None:
    """(extra) a line without a colon, or with whitespace before it, is an error"""
    with pytest.raises(RemoteProtocolError, match="invalid header line"):
        parse(b"HTTP/1.1 200 OK\r\n" + line + b"\r\n\r\n")


def test_rejects_a_folded_first_line() -> None:
    """(extra) a continuation line needs a field to continue"""
    with pytest.raises(RemoteProtocolError, match="folded line"):
        parse(b"HTTP/1.1 200 OK\r\n  orphan\r\n\r\n")


def test_rejects_oversize_heads() -> None:
    """oversize headers: more than 64 KiB of head is a RemoteProtocolError, split or not"""
    big = b"x-big: " + b"a" * MAX_HEAD + b"\r\n"
    with pytest.raises(RemoteProtocolError, match="larger than 65536"):
        parse(b"HTTP/1.1 200 OK\r\n", big)  # never terminated
    with pytest.raises(RemoteProtocolError, match="larger than 65536"):
        parse(b"HTTP/1.1 200 OK\r\n" + big + b"\r\n")  # terminated, but too late
    parser = parse(b"HTTP/1.1 200 OK\r\nx: " + b"a" * (MAX_HEAD - 100) + b"\r\ncontent-length: 0\r\n\r\n")
    assert parser.complete


# ---------------------------------------------------------------------- framing
@pytest.mark.parametrize(
    ("status", "head_only", "connect"),
    [(204, False, False), (304, False, False), (200, True, False), (200, False, True)],
)
def test_responses_without_a_body(status: int, head_only: bool, connect: bool) -> None:
    """HEAD/204/304 (and a CONNECT's 2xx): no body even with a content-length"""
    parser = parse(f"HTTP/1.1 {status} X\r\ncontent-length: 10\r\n\r\n".encode(), head_only=head_only, connect=connect)
    assert parser.complete
    assert parser.keep_alive
    assert parser.body == []


def test_a_refused_connect_has_a_body() -> None:
    """(extra) a CONNECT answered 407 is framed like any response"""
    parser = parse(b"HTTP/1.1 407 Proxy Auth\r\ncontent-length: 4\r\n\r\nnope", connect=True)
    assert body_of(parser) == b"nope"


def test_reads_a_content_length_body_across_reads() -> None:
    """content-length: the body is exactly that many bytes, in whatever pieces they come"""
    parser = parse(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n0123", b"45", b"6789")
    assert body_of(parser) == b"0123456789"
    assert parser.complete
    assert parser.keep_alive
    assert not parser.extra
    assert parser.received == len(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n") + 10


def test_repeated_equal_content_lengths_are_one() -> None:
    """(extra) 'content-length: 3, 3' and two equal fields are accepted"""
    assert body_of(parse(b"HTTP/1.1 200 OK\r\ncontent-length: 3, 3\r\ncontent-length: 3\r\n\r\nabc")) == b"abc"


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (b"3, 4", "conflicting"),
        (b"abc", "invalid content-length"),
        (b"-1", "invalid content-length"),
        (b"\xb2", "invalid content-length"),
        (b"", "invalid content-length"),
        (b"1" * 19, "invalid content-length"),
    ],
)
def test_rejects_conflicting_or_invalid_content_length(value: bytes, match: str) -> None:
    """conflicting content-length: rejected, as are values that are not plain digits"""
    with pytest.raises(RemoteProtocolError, match=match):
        parse(b"HTTP/1.1 200 OK\r\ncontent-length: " + value + b"\r\n\r\n")


def test_reads_a_chunked_body_with_extensions_and_trailers() -> None:
    """chunked with extensions and trailers: extensions ignored, trailers read and dropped"""
    parser = parse(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n"
        b"5;name=value;x\r\nhello\r\nA \t; spaced\r\n, world!!!\r\n"
        b"0;last\r\nx-checksum: 1\r\nx-more: 2\r\n\r\n"
    )
    assert parser.body == [b"hello", b", world!!!"]
    assert parser.complete
    assert parser.keep_alive
    assert not parser.extra


def test_a_chunked_body_split_everywhere() -> None:
    """(extra) a chunk's data, size line and terminator may each be split across reads"""
    parser = parse(
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0",
        b"a\r\n0123",
        b"456789\r",
        b"\n0\r\nt: x",
        b"\r\n\r",
        b"\n",
    )
    assert body_of(parser) == b"0123456789"
    assert parser.complete


@pytest.mark.parametrize(
    "size_line",
    [b"zz", b"0x10", b"-1", b"+1", b" ", b"", b"1_0", b"1" * 17, b";ext"],
)
def test_rejects_a_bad_chunk_size(size_line: bytes) -> None:
    """bad chunk size: anything but 1-16 hex digits is a RemoteProtocolError"""
    with pytest.raises(RemoteProtocolError, match="invalid chunk size"):
        parse(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + size_line + b"\r\nxx\r\n")


def test_rejects_chunk_data_longer_than_its_size() -> None:
    """(extra) the chunk's data must be followed by its line break"""
    with pytest.raises(RemoteProtocolError, match="longer than its size"):
        parse(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n")


def test_rejects_endless_chunk_lines_and_trailers() -> None:
    """(extra) a size line or trailer section without end is bounded"""
    head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
    with pytest.raises(RemoteProtocolError, match="chunk-size line is longer"):
        parse(head + b"1" + b";" * MAX_CHUNK_LINE)
    with pytest.raises(RemoteProtocolError, match="trailer section is larger"):
        parse(head + b"0\r\n" + b"x" * (MAX_HEAD + 1))
    with pytest.raises(RemoteProtocolError, match="trailer section is larger"):
        parse(head + b"0\r\n" + (b"x-t: " + b"v" * 1000 + b"\r\n") * 70)


def test_rejects_transfer_codings_other_than_chunked() -> None:
    """(extra) gzip or identity as a transfer coding is not supported"""
    for value in (b"gzip, chunked", b"identity", b"chunked, gzip"):
        with pytest.raises(RemoteProtocolError, match="only chunked"):
            parse(b"HTTP/1.1 200 OK\r\ntransfer-encoding: " + value + b"\r\n\r\n")


def test_chunked_wins_over_content_length_but_the_connection_is_not_reused() -> None:
    """(extra) both framings at once: chunked is read, the connection is closed afterwards"""
    parser = parse(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\ntransfer-encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n")
    assert body_of(parser) == b"x"
    assert parser.complete
    assert not parser.keep_alive


def test_reads_until_close_without_framing() -> None:
    """close-delimited: without content-length or chunked the body ends when the server closes"""
    parser = parse(b"HTTP/1.1 200 OK\r\n\r\nsome", b" body")
    before_eof = parser.complete
    assert not before_eof
    parser.feed_eof()
    assert body_of(parser) == b"some body"
    assert parser.complete
    assert not parser.keep_alive


@pytest.mark.parametrize(
    ("head", "keep"),
    [
        (b"HTTP/1.1 200 OK\r\n", True),
        (b"HTTP/1.1 200 OK\r\nconnection: close\r\n", False),
        (b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\n", False),
        (b"HTTP/1.0 200 OK\r\n", False),
        (b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\n", True),
    ],
)
def test_keep_alive_follows_version_and_connection_field(head: bytes, keep: bool) -> None:
    """connection: close / HTTP/1.0: 1.1 keeps unless close, 1.0 closes unless keep-alive"""
    parser = parse(head + b"content-length: 0\r\n\r\n")
    assert parser.complete
    assert parser.keep_alive is keep


def test_bytes_after_the_message_are_flagged() -> None:
    """(extra) anything after the end of the response makes the connection unfit for reuse"""
    parser = parse(b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nxHTTP/1.1 200 OK\r\n")
    assert parser.complete
    assert parser.extra
    assert body_of(parser) == b"x"
    idle = ResponseParser()
    idle.feed(b"unasked")
    assert idle.extra
    idle.feed_eof()  # nothing expected, nothing lost


# --------------------------------------------------------------------- truncation
@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "without answering"),
        (b"HTTP/1.1 200 OK\r\ncontent-le", "middle of the response head"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n0123", "6 bytes of the body still to come"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab", "middle of the chunked body"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nabcde", "middle of the chunked body"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5", "middle of the chunked body"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n", "middle of the chunked body"),
    ],
    ids=["nothing", "mid-head", "content-length", "mid-chunk", "chunk-end", "size-line", "trailers"],
)
def test_an_early_end_is_a_read_error(data: bytes, match: str) -> None:
    """truncated bodies: EOF mid-head, before content-length or mid-chunk raises ReadError"""
    parser = parse(data)
    with pytest.raises(ReadError, match=match):
        parser.feed_eof()


def test_an_end_after_a_complete_message_is_fine() -> None:
    """(extra) EOF once the response is complete loses nothing"""
    parser = parse(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", eof=True)
    assert parser.complete
    assert body_of(parser) == b"ok"


# ------------------------------------------------------------------ any split
_TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-ABCXYZ0123", min_size=1, max_size=12).filter(
    lambda name: name.lower() not in ("content-length", "transfer-encoding", "connection")
)
_VALUE = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0xFF), max_size=20)


@st.composite
def responses(draw: st.DrawFn) -> tuple[bytes, int, list[tuple[str, str]], bytes]:
    """A valid response: optional interim heads, fields, and a chunked or content-length body."""
    status = draw(st.sampled_from([200, 201, 400, 404, 500]))
    fields = draw(st.lists(st.tuples(_TOKEN, _VALUE), max_size=5))
    body = draw(st.binary(max_size=300))
    chunked = draw(st.booleans())
    line_end = draw(st.sampled_from([b"\r\n", b"\n"]))
    interim = b"".join(
        b"HTTP/1.1 %d Interim" % code + line_end + line_end for code in draw(st.lists(st.sampled_from([100, 103])))
    )
    lines = [f"HTTP/1.1 {status} Reason Phrase".encode(), *(f"{n}: {v}".encode("latin-1") for n, v in fields)]
    if chunked:
        lines.append(b"Transfer-Encoding: chunked")
        cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=6)))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        extension = draw(st.sampled_from([b"", b";a=b", b" ;x"]))
        framed = b"".join(b"%x%s\r\n%s\r\n" % (len(p), extension, p) for p in pieces if p)
        trailer = draw(st.sampled_from([b"", b"x-trailer: 1\r\n"]))
        payload = framed + b"0\r\n" + trailer + b"\r\n"
    else:
        lines.append(b"Content-Length: %d" % len(body))
        payload = body
    data = interim + line_end.join(lines) + line_end + line_end + payload
    return data, status, [(n, v.strip(" \t")) for n, v in fields], body


@settings(max_examples=300, deadline=None)
@given(responses(), st.data())
def test_any_split_of_a_response_parses_the_same(
    response: tuple[bytes, int, list[tuple[str, str]], bytes], data: st.DataObject
) -> None:
    """(property) any split of a valid chunked or content-length response yields the same status, headers, body"""
    raw, status, fields, body = response
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=20)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    parser = ResponseParser()
    parser.start()
    received = b""
    for piece in pieces:
        parser.feed(piece)
        received += b"".join(parser.body)
        parser.body = []
    assert parser.head is not None
    assert parser.head.status == status
    assert [
        item for item in parser.head.headers.items() if item[0].lower() not in ("content-length", "transfer-encoding")
    ] == fields
    assert received == body
    assert parser.complete
    assert parser.keep_alive
    assert not parser.extra
    assert parser.received == len(raw)
