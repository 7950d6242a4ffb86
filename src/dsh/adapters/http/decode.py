"""Content decoding of response bodies: ``gzip`` and ``deflate`` with zlib, nothing else.

:func:`body_decoder` reads a ``content-encoding`` value: ``identity`` entries are
skipped and None means nothing to decode. One coding is supported per body: ``gzip``
(or ``x-gzip``), or ``deflate`` in the zlib-wrapped form RFC 9110 names or the raw form
some servers send (told apart by the zlib header). Any other value (``br``, ``zstd``,
stacked codings such as ``gzip, gzip``) yields a decoder that raises
:class:`DecodingError` naming it as soon as there is body data to decode, so a response
without a body still reads. Corrupt or truncated data raises :class:`DecodingError`
(the zlib error as ``__cause__``).
"""

from __future__ import annotations

from types import ModuleType

from dsh.adapters.http.errors import DecodingError

_GZIP = ("gzip", "x-gzip")
_MAX_WBITS = 15


def _zlib_wrapped(first: int, second: int) -> bool:
    """Whether two bytes are a zlib header (RFC 1950: method 8, window <= 32 KiB, check bits)."""
    return first & 0x0F == 8 and first >> 4 <= 7 and (first << 8 | second) % 31 == 0


class BodyDecoder:
    """Decodes one body: feed its pieces to :meth:`decode`, then call :meth:`flush` once at its end.

    ``url`` is set on every :class:`DecodingError` raised.
    """

    __slots__ = ("_decompress", "_fed", "_probe", "_unsupported", "_zlib", "coding", "url")

    def __init__(self, coding: str, url: str | None = None) -> None:
        import zlib  # only encoded bodies need it: kept out of the import of the package

        self._zlib: ModuleType = zlib
        self.coding = coding
        self.url = url
        self._unsupported = coding not in _GZIP and coding != "deflate"
        self._decompress = zlib.decompressobj(_MAX_WBITS | 16)
        self._probe: bytes | None = b"" if coding == "deflate" else None
        self._fed = False

    def decode(self, data: bytes) -> bytes:
        """The decoded bytes of the next body piece (maybe ``b""`` while zlib buffers)."""
        if self._unsupported:
            raise DecodingError(
                f"the response uses content-encoding {self.coding!r}, which is not supported "
                "(only gzip or deflate): send accept-encoding: gzip, or identity",
                url=self.url,
            )
        self._fed = True
        probe = self._probe
        if probe is not None:  # deflate: learn from the first two bytes whether a zlib header wraps it
            data = probe + data
            if len(data) < 2:
                self._probe = data
                return b""
            self._probe = None
            wrapped = _zlib_wrapped(data[0], data[1])
            self._decompress = self._zlib.decompressobj(_MAX_WBITS if wrapped else -_MAX_WBITS)
        try:
            return self._decompress.decompress(data)
        except self._zlib.error as error:
            raise DecodingError(f"the {self.coding} body is corrupt: {error}", url=self.url) from error

    def flush(self) -> bytes:
        """The bytes zlib still holds at the end of the body; raises if the body was truncated."""
        if not self._fed:
            return b""
        decompress = self._decompress
        tail = decompress.flush()
        if not decompress.eof:  # (also when a deflate body stopped after one byte)
            raise DecodingError(f"the {self.coding} body ends before its end marker (truncated)", url=self.url)
        return tail


def body_decoder(content_encoding: str | None, url: str | None = None) -> BodyDecoder | None:
    """The decoder for a ``content-encoding`` value, or None when the body is not encoded."""
    if content_encoding is None:
        return None
    codings = [coding.strip().lower() for coding in content_encoding.split(",")]
    codings = [coding for coding in codings if coding and coding != "identity"]
    if not codings:
        return None
    return BodyDecoder(codings[0] if len(codings) == 1 else ", ".join(codings), url)


__all__ = ["BodyDecoder", "body_decoder"]
