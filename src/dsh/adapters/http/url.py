"""Request URLs: ``http`` and ``https`` only, parsed once into what the wire needs.

:func:`parse_url` accepts ``scheme://host[:port][/path][?query][#fragment]``:

* the scheme is ``http`` or ``https`` (any case); anything else is an :class:`InvalidUrlError`
  naming it;
* the host is a name, an IPv4 address or a bracketed IPv6 literal (``[::1]``); names are
  lower-cased, and a non-ASCII name is converted with IDNA;
* the port defaults to 80 / 443 and must be 1-65535;
* credentials (``user:pass@``) are rejected: send an ``authorization`` header instead;
* the path and query are kept verbatim (non-ASCII characters are percent-encoded as
  UTF-8; spaces and control characters are rejected), an empty path is ``/``, and the
  fragment is dropped (it is never sent).
"""

from __future__ import annotations

import socket

from dsh.adapters.http.errors import InvalidUrlError

DEFAULT_PORTS = {"http": 80, "https": 443}
"""The port of each supported scheme when the URL names none."""

_HOST_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-._"
_DIGITS = "0123456789"


class Url:
    """A parsed request URL; ``target`` is the path and query as sent (``/`` at least). Immutable by convention."""

    __slots__ = ("host", "port", "scheme", "target")

    def __init__(self, scheme: str, host: str, port: int, target: str) -> None:
        self.scheme = scheme
        self.host = host
        self.port = port
        self.target = target

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Url) and (self.scheme, self.host, self.port, self.target) == (
            other.scheme,
            other.host,
            other.port,
            other.target,
        )

    def __hash__(self) -> int:
        return hash((self.scheme, self.host, self.port, self.target))

    def __repr__(self) -> str:
        return f"Url({self.scheme!r}, {self.host!r}, {self.port!r}, {self.target!r})"

    @property
    def authority(self) -> str:
        """``host:port`` (IPv6 in brackets), as a ``CONNECT`` request names its target."""
        return f"{_bracketed(self.host)}:{self.port}"

    @property
    def host_header(self) -> str:
        """The ``Host`` header value: the host, with the port only when it is not the scheme's default."""
        host = _bracketed(self.host)
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def origin(self) -> str:
        """``scheme://host[:port]``."""
        return f"{self.scheme}://{self.host_header}"

    def __str__(self) -> str:
        return f"{self.origin}{self.target}"


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def parse_url(text: str) -> Url:
    """Parse ``text``; raises :class:`InvalidUrlError` saying what is wrong and how to fix it."""
    scheme, sep, rest = text.partition("://")
    if not sep:
        raise InvalidUrlError(f"URL {text!r} has no scheme: write it as http://host/... or https://host/...", url=text)
    scheme = scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise InvalidUrlError(
            f"URL scheme {scheme!r} is not supported in {text!r}: only http:// and https:// are", url=text
        )
    end = len(rest)
    for mark in "/?#":
        found = rest.find(mark)
        if 0 <= found < end:
            end = found
    authority, target = rest[:end], rest[end:]
    if "@" in authority:
        redacted = f"{scheme}://***@{authority.rpartition('@')[2]}{target}"
        raise InvalidUrlError(
            f"URL {redacted!r} contains credentials: remove them and send an authorization header instead",
            url=redacted,
        )
    host, port = _split_authority(authority, DEFAULT_PORTS[scheme], text)
    return Url(scheme, host, port, _target(target, text))


def _split_authority(authority: str, default_port: int, text: str) -> tuple[str, int]:
    if authority.startswith("["):
        close = authority.find("]")
        after = authority[close + 1 :]
        if close < 0 or (after and not after.startswith(":")):
            raise InvalidUrlError(
                f"URL {text!r} has a malformed IPv6 address: write it as [addr] or [addr]:port", url=text
            )
        host = authority[1:close]
        try:
            socket.inet_pton(socket.AF_INET6, host)
        except (OSError, ValueError):
            raise InvalidUrlError(f"URL {text!r} has an invalid IPv6 address {host!r}", url=text) from None
        return host.lower(), _port(after[1:], default_port, text)
    host, colon, port_text = authority.rpartition(":")
    if not colon:
        return _host_name(port_text, text), default_port
    return _host_name(host, text), _port(port_text, default_port, text)


def _host_name(host: str, text: str) -> str:
    if not host:
        raise InvalidUrlError(f"URL {text!r} has no host", url=text)
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise InvalidUrlError(f"URL {text!r} has a host name IDNA cannot encode: {host!r}", url=text) from None
    host = host.lower()
    if host.strip(_HOST_CHARS):
        raise InvalidUrlError(f"URL {text!r} has an invalid host {host!r}", url=text)
    return host


def _port(port_text: str, default_port: int, text: str) -> int:
    if not port_text:  # "host:" means the default port (RFC 3986)
        return default_port
    if len(port_text) > 5 or port_text.strip(_DIGITS) or not 0 < int(port_text) < 65536:
        raise InvalidUrlError(f"URL {text!r} has an invalid port {port_text!r}: use 1-65535", url=text)
    return int(port_text)


def _target(target: str, text: str) -> str:
    target = target.partition("#")[0]
    if not target.isascii():
        target = "".join(char if char.isascii() else _percent(char) for char in target)
    if not target.isprintable() or " " in target:
        raise InvalidUrlError(
            f"URL {text!r} contains spaces or control characters: percent-encode them (%20, ...)", url=text
        )
    if not target.startswith("/"):
        target = "/" + target
    return target


def _percent(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


__all__ = ["DEFAULT_PORTS", "Url", "parse_url"]
