"""Request heads as bytes: the request line, ``Host``, the caller's fields and ``content-length``.

:func:`encode_request` refuses what could corrupt the request (:class:`InvalidRequestError`):
a method or header name that is not an RFC 9110 token, a CR, LF or NUL in a header
value (header injection), characters outside Latin-1, and a ``transfer-encoding``
field (the body is always sent whole, with ``content-length``). The ``Host`` field comes
from the URL unless the caller gives one; a caller's ``content-length`` is replaced by
the body's length, which is sent whenever there is a body or the method is ``POST``,
``PUT`` or ``PATCH``. No other field is added: no ``accept``, ``user-agent`` or
``accept-encoding`` unless the caller sends them. A caller's ``connection: close`` is
reported back, so the connection is not reused after that response.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

from dsh.adapters.http.errors import InvalidRequestError
from dsh.adapters.http.proxy import Proxy
from dsh.adapters.http.url import Url

RequestHeaders: TypeAlias = Mapping[str, str] | Sequence[tuple[str, str]]
"""Header fields of a request: a mapping, or ``(name, value)`` pairs (repeats allowed)."""

_TOKEN = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def _check_token(kind: str, text: str, url: Url) -> None:
    if not text or text.strip(_TOKEN):
        raise InvalidRequestError(
            f"{kind} {text!r} is not a valid HTTP token: use only letters, digits and !#$%&'*+-.^_`|~",
            url=str(url),
        )


def request_prefix(method: str, url: Url, headers: RequestHeaders, proxy: Proxy | None = None) -> tuple[bytes, bool]:
    """The head up to its framing: request line, ``Host``, the fields (each line ending in CRLF).

    Also says whether the caller asked to close (``connection: close``). ``proxy`` is
    only given for an ``http`` target going through a forward proxy: the request line
    then has the absolute form, and ``proxy-authorization`` is added. The result
    depends only on the arguments, so callers may cache it.
    """
    _check_token("method", method, url)
    lines = [f"{method} {url.target if proxy is None else url} HTTP/1.1"]
    host = url.host_header
    close = False
    fields = headers.items() if isinstance(headers, Mapping) else headers
    for name, value in fields:
        _check_token("header name", name, url)
        if "\r" in value or "\n" in value or "\0" in value:
            raise InvalidRequestError(
                f"header {name!r} has a CR, LF or NUL in its value, which would let it inject header lines: "
                "remove those characters",
                url=str(url),
            )
        lower = name.lower()
        if lower == "host":
            host = value
        elif lower == "transfer-encoding":
            raise InvalidRequestError(
                "header 'transfer-encoding' cannot be set: the client sends the whole body with content-length",
                url=str(url),
            )
        elif lower != "content-length":
            lines.append(f"{name}: {value}")
            if lower == "connection":
                close = close or "close" in (token.strip().lower() for token in value.split(","))
    lines.insert(1, f"Host: {host}")
    if proxy is not None and proxy.authorization is not None:
        lines.append(f"proxy-authorization: {proxy.authorization}")
    lines.append("")
    try:
        return "\r\n".join(lines).encode("latin-1"), close
    except UnicodeEncodeError as error:
        culprit = error.object[error.start : error.end]
        raise InvalidRequestError(
            f"a header value has characters outside Latin-1 ({culprit!r}): encode them (ASCII is safest)",
            url=str(url),
        ) from error


def framing(method: str, body_length: int) -> bytes:
    """The end of the head: ``content-length`` (when there is a body or the method expects one) and the blank line."""
    if body_length or method in _BODY_METHODS:
        return b"content-length: %d\r\n\r\n" % body_length
    return b"\r\n"


def encode_request(
    method: str, url: Url, headers: RequestHeaders, body_length: int, proxy: Proxy | None = None
) -> tuple[bytes, bool]:
    """The whole request head, and whether the caller asked to close; see :func:`request_prefix`."""
    prefix, close = request_prefix(method, url, headers, proxy)
    return prefix + framing(method, body_length), close


def encode_connect(url: Url, proxy: Proxy) -> bytes:
    """The ``CONNECT host:port`` request opening a tunnel to ``url``'s origin through ``proxy``."""
    lines = [f"CONNECT {url.authority} HTTP/1.1", f"Host: {url.authority}"]
    if proxy.authorization is not None:
        lines.append(f"proxy-authorization: {proxy.authorization}")
    lines.append("\r\n")
    return "\r\n".join(lines).encode("latin-1")


__all__ = ["RequestHeaders", "encode_connect", "encode_request", "framing", "request_prefix"]
