"""Content decoding: gzip and deflate (both forms) with zlib; anything else is a clear DecodingError."""

from __future__ import annotations

import gzip
import zlib

import pytest

from dsh.adapters.http import DecodingError
from dsh.adapters.http.decode import BodyDecoder, body_decoder

TEXT = b"data: " + b"event stream payload " * 200


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def decode_in_pieces(decoder: BodyDecoder, data: bytes, size: int) -> bytes:
    out = b"".join(decoder.decode(data[i : i + size]) for i in range(0, len(data), size))
    return out + decoder.flush()


@pytest.mark.parametrize(
    ("encoding", "encoded"),
    [
        ("gzip", gzip.compress(TEXT, mtime=0)),
        ("x-gzip", gzip.compress(TEXT, mtime=0)),
        ("deflate", zlib.compress(TEXT)),
        ("deflate", raw_deflate(TEXT)),
        ("GZip, identity", gzip.compress(TEXT, mtime=0)),
    ],
    ids=["gzip", "x-gzip", "deflate-zlib", "deflate-raw", "gzip-identity"],
)
@pytest.mark.parametrize("size", [1, 7, 100_000])
def test_decodes_gzip_and_deflate_in_any_pieces(encoding: str, encoded: bytes, size: int) -> None:
    """gzip and deflate bodies: decoded with zlib, whatever the piece sizes (deflate with or without zlib header)"""
    decoder = body_decoder(encoding, "http://h/")
    assert decoder is not None
    assert decode_in_pieces(decoder, encoded, size) == TEXT


@pytest.mark.parametrize("value", [None, "identity", " Identity , ", ""])
def test_no_decoder_for_an_unencoded_body(value: str | None) -> None:
    """(extra) no content-encoding (or identity) means no decoding at all"""
    assert body_decoder(value) is None


@pytest.mark.parametrize("value", ["br", "zstd", "compress", "gzip, gzip", "gzip, br"])
def test_unknown_encoding_is_named_once_there_is_data(value: str) -> None:
    """unknown encoding: a DecodingError naming it (only when there is body data to decode)"""
    decoder = body_decoder(value, "http://h/x")
    assert decoder is not None
    assert decoder.flush() == b""  # an empty body reads fine
    with pytest.raises(DecodingError) as caught:
        decoder.decode(b"payload")
    assert repr(value.lower()) in str(caught.value)
    assert "accept-encoding" in str(caught.value)
    assert caught.value.url == "http://h/x"


def test_corrupt_data_is_a_decoding_error_with_the_zlib_cause() -> None:
    """(extra) garbage after a valid gzip header: DecodingError from zlib.error"""
    decoder = body_decoder("gzip", "http://h/")
    assert decoder is not None
    with pytest.raises(DecodingError, match="gzip body is corrupt") as caught:
        decoder.decode(gzip.compress(TEXT, mtime=0)[:10] + b"\xff" * 50)
    assert isinstance(caught.value.__cause__, zlib.error)
    assert caught.value.url == "http://h/"


@pytest.mark.parametrize(
    ("encoding", "data"),
    [("gzip", gzip.compress(TEXT, mtime=0)[:-8]), ("deflate", zlib.compress(TEXT)[:-4]), ("deflate", b"x")],
    ids=["gzip", "deflate", "deflate-one-byte"],
)
def test_a_truncated_body_is_a_decoding_error(encoding: str, data: bytes) -> None:
    """(extra) a body that stops before its end marker fails at flush"""
    decoder = body_decoder(encoding)
    assert decoder is not None
    decoder.decode(data)
    with pytest.raises(DecodingError, match="truncated"):
        decoder.flush()
