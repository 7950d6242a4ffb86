"""An incremental HTTP/1.x response parser: fed whatever bytes arrive, it yields the head and body pieces.

:class:`ResponseParser` is reset with :meth:`~ResponseParser.start` for each request and
fed with :meth:`~ResponseParser.feed` / :meth:`~ResponseParser.feed_eof`. It reads:

* the status line ``HTTP/1.0|1.1 <3 digits> [<reason>]`` and the header fields (lines end
  in CRLF or a bare LF; an obsolete line folding is replaced by a space), at most
  :data:`MAX_HEAD` bytes per head;
* interim ``1xx`` responses (100, 103, ...), which it skips to the final one (a ``101``
  is an error: the client never asks to switch protocols);
* the body, framed as RFC 9112 §6.3 says: none for a ``HEAD`` request, ``204``, ``304``
  and a ``CONNECT`` tunnel's ``2xx``; ``transfer-encoding: chunked`` (extensions
  ignored, trailers read and dropped); ``content-length``; else everything up to the
  server's close.

The body arrives in :attr:`~ResponseParser.body` as pieces (slices of the fed data, one
per chunk); the owner takes them by swapping the list. A whole chunked or
length-delimited body fed at once is parsed in one pass of ``find`` and slicing, never
byte by byte. Malformed input raises :class:`RemoteProtocolError`; an end of input in
the middle of a response raises :class:`ReadError`. After either the parser is spent
until the next :meth:`~ResponseParser.start`.
"""

from __future__ import annotations

from collections.abc import Iterable

from dsh.adapters.http.errors import ReadError, RemoteProtocolError

MAX_HEAD = 65536
"""The largest response head (status line and header fields) accepted, in bytes; the trailer section's limit too."""

MAX_CHUNK_LINE = 4096
"""The largest chunk-size line (size and extensions) accepted, in bytes."""

_HEX = b"0123456789abcdefABCDEF"

# Parser states.
_IDLE = 0
_HEAD = 1
_LENGTH = 2
_CHUNK_SIZE = 3
_CHUNK_DATA = 4
_CHUNK_END = 5
_TRAILERS = 6
_UNTIL_CLOSE = 7
_DONE = 8


class Headers:
    """Response header fields in the order received; lookups ignore case.

    :meth:`get` returns a field's values joined with ``", "`` (as RFC 9110 combines
    repeated fields), :meth:`get_all` each value apart, :meth:`items` every
    ``(name, value)`` pair with the names as the server spelled them.
    """

    __slots__ = ("_index", "_items")

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        self._items = list(items)
        index: dict[str, str] = {}
        for name, value in self._items:
            key = name.lower()
            previous = index.get(key)
            index[key] = value if previous is None else f"{previous}, {value}"
        self._index = index

    @classmethod
    def _indexed(cls, items: list[tuple[str, str]], index: dict[str, str]) -> Headers:
        """Headers from ``items`` whose lower-cased, joined ``index`` the caller built already."""
        headers = cls.__new__(cls)
        headers._items = items
        headers._index = index
        return headers

    def get(self, name: str, default: str | None = None) -> str | None:
        """The values of ``name`` joined with ``", "``, or ``default`` when absent."""
        return self._index.get(name.lower(), default)

    def get_all(self, name: str) -> list[str]:
        """Every value of ``name``, in order (``[]`` when absent)."""
        key = name.lower()
        return [value for field_name, value in self._items if field_name.lower() == key]

    def items(self) -> list[tuple[str, str]]:
        """Every ``(name, value)`` pair in the order received."""
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._index

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Headers) and self._items == other._items

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


class ResponseHead:
    """The final response's status line and header fields."""

    __slots__ = ("headers", "http_version", "reason", "status")

    def __init__(self, http_version: str, status: int, reason: str, headers: Headers) -> None:
        self.http_version = http_version
        self.status = status
        self.reason = reason
        self.headers = headers

    def __repr__(self) -> str:
        return f"ResponseHead({self.http_version!r}, {self.status!r}, {self.reason!r}, {self.headers!r})"


class ResponseParser:
    """Parses one response per :meth:`start`; see the module docstring.

    After each :meth:`feed`: :attr:`head` is set once the final head arrived; new body
    pieces are in :attr:`body`; :attr:`complete` says the message ended;
    :attr:`keep_alive` whether the connection may carry another request (by the
    response's version, ``connection`` field and framing); :attr:`extra` whether bytes
    followed the end of the message (the connection must then not be reused);
    :attr:`received` counts the bytes fed since :meth:`start`.
    """

    __slots__ = (
        "_connect",
        "_head_buf",
        "_head_only",
        "_left",
        "_pending",
        "_state",
        "_trailer_bytes",
        "body",
        "complete",
        "extra",
        "head",
        "keep_alive",
        "received",
    )

    def __init__(self) -> None:
        self.head: ResponseHead | None = None
        self.body: list[bytes] = []
        self.complete = False
        self.keep_alive = False
        self.extra = False
        self.received = 0
        self._state = _IDLE
        self._head_buf = bytearray()
        self._pending = b""
        self._left = 0
        self._trailer_bytes = 0
        self._head_only = False
        self._connect = False

    def start(self, *, head_only: bool = False, connect: bool = False) -> None:
        """Expect a new response; ``head_only`` for a ``HEAD`` request, ``connect`` for a ``CONNECT``."""
        self.head = None
        self.body = []
        self.complete = self.keep_alive = self.extra = False
        self.received = 0
        self._state = _HEAD
        self._head_buf.clear()
        self._pending = b""
        self._left = self._trailer_bytes = 0
        self._head_only = head_only
        self._connect = connect

    # ------------------------------------------------------------------ feeding
    def feed(self, data: bytes) -> None:
        """Parse ``data``; raises :class:`RemoteProtocolError` on malformed input."""
        self.received += len(data)
        if self._pending:
            data = self._pending + data
            self._pending = b""
        pos = 0
        end = len(data)
        while pos < end:
            state = self._state
            if state in (_CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END):
                pos = self._chunked(data, pos)
            elif state == _LENGTH:
                pos = self._length(data, pos)
            elif state == _HEAD:
                pos = self._head(data, pos)
            elif state == _UNTIL_CLOSE:
                self.body.append(data[pos:] if pos else data)
                pos = end
            elif state == _TRAILERS:
                pos = self._trailers(data, pos)
            else:  # done (or idle): bytes no request asked for
                self.extra = True
                return

    def feed_eof(self) -> None:
        """The server closed the connection; raises :class:`ReadError` unless the response was complete."""
        state = self._state
        if state == _UNTIL_CLOSE:
            self._done()
        elif state == _HEAD:
            if self.received:
                raise ReadError("the server closed the connection in the middle of the response head")
            raise ReadError("the server closed the connection without answering")
        elif state == _LENGTH:
            raise ReadError(f"the server closed the connection with {self._left} bytes of the body still to come")
        elif state != _DONE and state != _IDLE:
            raise ReadError("the server closed the connection in the middle of the chunked body")

    def _done(self) -> None:
        self.complete = True
        self._state = _DONE

    # --------------------------------------------------------------------- head
    def _head(self, data: bytes, pos: int) -> int:
        buf = self._head_buf
        source: bytes | bytearray
        if buf:  # the head began in an earlier read: search the joined bytes
            prior = len(buf)
            buf += data[pos:] if pos else data
            source, start, scan, shift = buf, 0, max(prior - 2, 0), pos - prior
        else:  # search the read itself, copying nothing
            source, start, scan, shift = data, pos, pos, 0
        crlf = source.find(b"\n\r\n", scan)
        lf = source.find(b"\n\n", scan, len(source) if crlf < 0 else crlf + 1)
        if lf >= 0:
            cut, head_end = lf, lf + 2
        elif crlf >= 0:
            cut, head_end = crlf, crlf + 3
        else:
            if source is data:
                buf += data[pos:] if pos else data
            if len(buf) > MAX_HEAD:
                raise RemoteProtocolError(f"the response head is larger than {MAX_HEAD} bytes")
            return len(data)
        if head_end - start > MAX_HEAD:
            raise RemoteProtocolError(f"the response head is larger than {MAX_HEAD} bytes")
        text = source[start:cut].decode("latin-1")
        buf.clear()
        self._on_head(text)
        return head_end + shift

    def _on_head(self, text: str) -> None:
        lines = text.split("\n")
        status_line = lines[0].rstrip("\r")
        version = status_line[:8]
        code = status_line[9:12]
        if (
            (version != "HTTP/1.1" and version != "HTTP/1.0")
            or status_line[8:9] != " "
            or len(code) != 3
            or not code.isdigit()
            or not code.isascii()
            or status_line[12:13] not in ("", " ")
        ):
            raise RemoteProtocolError(f"the server sent an invalid status line {status_line[:100]!r}")
        status = int(code)
        if status < 200:
            if status == 101:
                raise RemoteProtocolError("the server switched protocols (101) though the client never asked to")
            if status < 100:
                raise RemoteProtocolError(f"the server sent an invalid status code {status}")
            return  # an interim response: the final one follows
        headers = _fields(lines)
        self.head = ResponseHead(version, status, status_line[13:], headers)
        self._frame(version, status, headers._index)

    def _frame(self, version: str, status: int, fields: dict[str, str]) -> None:
        connection = fields.get("connection")
        tokens = {token.strip() for token in connection.lower().split(",")} if connection is not None else set()
        keep = "close" not in tokens if version == "HTTP/1.1" else "keep-alive" in tokens
        if self._head_only or status == 204 or status == 304 or (self._connect and status < 300):
            self.keep_alive = keep
            self._done()
            return
        encoding = fields.get("transfer-encoding")
        length = fields.get("content-length")
        if encoding is not None:
            codings = [coding.strip().lower() for coding in encoding.split(",")]
            if codings != ["chunked"]:
                raise RemoteProtocolError(f"the server sent transfer-encoding {encoding!r}; only chunked is supported")
            self.keep_alive = keep and length is None  # both framings at once: never reuse the connection
            self._state = _CHUNK_SIZE
        elif length is not None:
            self.keep_alive = keep
            self._left = _content_length(length)
            if self._left:
                self._state = _LENGTH
            else:
                self._done()
        else:
            self._state = _UNTIL_CLOSE

    # --------------------------------------------------------------------- body
    def _length(self, data: bytes, pos: int) -> int:
        left = self._left
        end = len(data)
        if end - pos < left:
            self.body.append(data[pos:] if pos else data)
            self._left = left - (end - pos)
            return end
        stop = pos + left
        self.body.append(data[pos:stop] if pos or stop != end else data)
        self._left = 0
        self._done()
        return stop

    def _chunked(self, data: bytes, pos: int) -> int:
        body = self.body
        end = len(data)
        state = self._state
        while pos < end:
            if state == _CHUNK_DATA:
                stop = pos + self._left
                if stop > end:
                    body.append(data[pos:] if pos else data)
                    self._left = stop - end
                    return end
                body.append(data[pos:stop])
                pos = stop
                state = self._state = _CHUNK_END
                continue
            newline = data.find(b"\n", pos)
            if newline < 0:
                if end - pos > MAX_CHUNK_LINE:
                    raise RemoteProtocolError(f"a chunk-size line is longer than {MAX_CHUNK_LINE} bytes")
                self._pending = data[pos:]
                return end
            line = data[pos:newline]
            pos = newline + 1
            if state == _CHUNK_END:  # the line break closing a chunk's data
                if line and line != b"\r":
                    raise RemoteProtocolError("a chunk's data is longer than its size says")
                state = self._state = _CHUNK_SIZE
                continue
            size_text = line.split(b";", 1)[0].strip()
            if not size_text or size_text.strip(_HEX) or len(size_text) > 16:
                raise RemoteProtocolError(f"the server sent an invalid chunk size {line[:40]!r}")
            size = int(size_text, 16)
            if size == 0:
                self._state = _TRAILERS
                return self._trailers(data, pos)
            self._left = size
            state = self._state = _CHUNK_DATA
        return pos

    def _trailers(self, data: bytes, pos: int) -> int:
        end = len(data)
        while pos < end:
            newline = data.find(b"\n", pos)
            if newline < 0:
                if self._trailer_bytes + end - pos > MAX_HEAD:
                    raise RemoteProtocolError(f"the trailer section is larger than {MAX_HEAD} bytes")
                self._pending = data[pos:]
                return end
            line = data[pos:newline]
            self._trailer_bytes += newline + 1 - pos
            pos = newline + 1
            if not line or line == b"\r":
                self._done()
                return pos
            if self._trailer_bytes > MAX_HEAD:
                raise RemoteProtocolError(f"the trailer section is larger than {MAX_HEAD} bytes")
        return pos


def _fields(lines: list[str]) -> Headers:
    """The header fields of a head's lines (the status line first), indexed in the same pass."""
    items: list[tuple[str, str]] = []
    index: dict[str, str] = {}
    folded = False
    for raw in lines[1:]:
        line = raw[:-1] if raw[-1:] == "\r" else raw
        first = line[:1]
        if first == " " or first == "\t":  # obsolete line folding continues the previous value
            if not items:
                raise RemoteProtocolError("the response head starts with a folded line")
            name, value = items[-1]
            continued = line.strip(" \t")
            items[-1] = (name, f"{value} {continued}" if value else continued)
            folded = True
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name[-1] in " \t":
            raise RemoteProtocolError(f"the server sent an invalid header line {line[:100]!r}")
        value = value.strip(" \t")
        items.append((name, value))
        key = name.lower()
        previous = index.get(key)
        index[key] = value if previous is None else f"{previous}, {value}"
    return Headers(items) if folded else Headers._indexed(items, index)


def _content_length(value: str) -> int:
    values = {item.strip() for item in value.split(",")}
    if len(values) != 1:
        raise RemoteProtocolError(f"the server sent conflicting content-length values {value!r}")
    text = values.pop()
    if not text or not text.isdigit() or not text.isascii() or len(text) > 18:
        raise RemoteProtocolError(f"the server sent an invalid content-length {value!r}")
    return int(text)


__all__ = ["MAX_CHUNK_LINE", "MAX_HEAD", "Headers", "ResponseHead", "ResponseParser"]
