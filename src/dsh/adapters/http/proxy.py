"""Proxy selection from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``).

:meth:`ProxySettings.from_environ` reads the variables once (the client does it when it
is created) and returns None when none is set, so the common case costs a few lookups.
Each variable may be written in lower or upper case; the lower-case one wins, as in curl.
An ``http`` target uses ``http_proxy`` then ``all_proxy``; an ``https`` target uses
``https_proxy`` then ``all_proxy``.

``NO_PROXY`` is a comma-separated list; an entry bypasses the proxy for:

* ``*``: every host;
* a host name, with or without a leading dot: that host and its subdomains
  (``example.com`` matches ``api.example.com``, not ``badexample.com``);
* an IP address (``127.0.0.1``, ``::1`` or ``[::1]``): exactly that address; a CIDR block
  (``10.0.0.0/8``): the addresses in it (IP targets never match host-name suffixes);
* any of these with ``:port``: only that port.

Only ``http://`` proxies are supported (a proxy written without a scheme is one). A
proxy with another scheme (``socks5://``, ``https://``) raises :class:`ProxyError` when a
request would use it, naming the variable. Credentials in the proxy URL become a
``proxy-authorization: Basic ...`` header.
"""

from __future__ import annotations

import binascii
import os
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING

from dsh.adapters.http.errors import HttpError, ProxyError
from dsh.adapters.http.url import Url, parse_url

if TYPE_CHECKING:  # imported at run time only when NO_PROXY lists a network
    from ipaddress import IPv4Network, IPv6Network

_SCHEME_VARIABLES = {
    "http": ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"),
    "https": ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"),
}
_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


class Proxy:
    """An ``http://`` proxy: where to connect, the ``proxy-authorization`` value, and its variable.

    Immutable by convention; equal proxies share pooled connections.
    """

    __slots__ = ("authorization", "host", "port", "variable")

    def __init__(self, host: str, port: int, authorization: str | None, variable: str) -> None:
        self.host = host
        self.port = port
        self.authorization = authorization
        self.variable = variable

    def _key(self) -> tuple[str, int, str | None, str]:
        return (self.host, self.port, self.authorization, self.variable)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Proxy) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        credentials = ", credentials" if self.authorization is not None else ""
        return f"<Proxy {self.url} from {self.variable}{credentials}>"

    @property
    def url(self) -> str:
        """``http://host:port`` (credentials left out, so it can appear in messages)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


class _Bypass:
    """One parsed ``NO_PROXY`` entry: a host-name suffix (no leading dot), an address or a network, maybe a port."""

    __slots__ = ("address", "host", "network", "port")

    def __init__(
        self,
        *,
        host: str | None = None,
        address: bytes | None = None,
        network: IPv4Network | IPv6Network | None = None,
        port: int | None = None,
    ) -> None:
        self.host = host
        self.address = address
        self.network = network
        self.port = port

    def matches(self, host: str, address: bytes | None, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if address is None:
            return self.host is not None and (host == self.host or host.endswith("." + self.host))
        if self.address is not None:
            return address == self.address
        if self.network is not None:
            import ipaddress

            return ipaddress.ip_address(host) in self.network
        return False


def _address(host: str) -> bytes | None:
    """The packed address of an IPv4/IPv6 literal, else None."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.inet_pton(family, host)
    except (OSError, ValueError):
        return None


def _parse_bypass(entry: str) -> _Bypass | None:
    """One ``NO_PROXY`` entry (already stripped and lower-cased); None when it is unusable."""
    host, port_text = entry, ""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:]
    elif entry.count(":") == 1:
        host, _, port_text = entry.partition(":")
    port: int | None = None
    if port_text:
        if not (port_text.isascii() and port_text.isdigit()):
            return None
        port = int(port_text)
    if "/" in host:
        import ipaddress

        try:
            return _Bypass(network=ipaddress.ip_network(host, strict=False), port=port)
        except ValueError:
            return None
    address = _address(host)
    if address is not None:
        return _Bypass(address=address, port=port)
    host = host.lstrip(".")
    return _Bypass(host=host, port=port) if host else None


class ProxySettings:
    """The proxy variables of one environment; see the module docstring.

    ``variables`` holds the set, non-empty ``*_proxy`` variables by name; ``no_proxy`` is
    the ``NO_PROXY`` value.
    """

    def __init__(self, variables: Mapping[str, str], no_proxy: str = "") -> None:
        self.variables = dict(variables)
        self.no_proxy = no_proxy
        self._bypass_all = False
        self._bypass: list[_Bypass] = []
        self._cache: dict[tuple[str, str, int], Proxy | None] = {}
        for raw in no_proxy.split(","):
            entry = raw.strip().lower()
            if entry == "*":
                self._bypass_all = True
            elif entry:
                bypass = _parse_bypass(entry)
                if bypass is not None:
                    self._bypass.append(bypass)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> ProxySettings | None:
        """The settings of ``environ`` (default ``os.environ``); None when no proxy variable is set."""
        source = os.environ if environ is None else environ
        found = {name: value for name in _VARIABLES if (value := source.get(name, ""))}
        if not found:
            return None
        return cls(found, source.get("no_proxy") or source.get("NO_PROXY") or "")

    def proxy_for(self, url: Url) -> Proxy | None:
        """The proxy ``url`` goes through, or None (no variable for its scheme, or NO_PROXY matches).

        Raises :class:`ProxyError` when the applicable variable names an unsupported proxy.
        """
        key = (url.scheme, url.host, url.port)
        try:
            return self._cache[key]
        except KeyError:
            pass
        proxy = self._select(url)
        self._cache[key] = proxy
        return proxy

    def _select(self, url: Url) -> Proxy | None:
        variable = next((name for name in _SCHEME_VARIABLES[url.scheme] if name in self.variables), None)
        if variable is None or self._bypassed(url):
            return None
        return _parse_proxy(variable, self.variables[variable])

    def _bypassed(self, url: Url) -> bool:
        if self._bypass_all:
            return True
        address = _address(url.host)
        return any(bypass.matches(url.host, address, url.port) for bypass in self._bypass)


def _parse_proxy(variable: str, value: str) -> Proxy:
    scheme, sep, rest = value.partition("://")
    if not sep:
        scheme, rest = "http", value
    if scheme.lower() != "http":
        raise ProxyError(
            f"{variable} names a {scheme}:// proxy, but only http:// proxies are supported: "
            f"set {variable} to an http:// proxy, or list the host in NO_PROXY"
        )
    authority = rest.split("/", 1)[0]
    userinfo, at, hostport = authority.rpartition("@")
    try:
        target = parse_url(f"http://{hostport}")
    except HttpError as error:
        raise ProxyError(f"{variable} is not a valid proxy URL: {error} (fix {variable})") from error
    authorization = None
    if at:
        if "%" in userinfo:
            from urllib.parse import unquote

            userinfo = unquote(userinfo)
        if ":" not in userinfo:
            userinfo += ":"
        token = binascii.b2a_base64(userinfo.encode("utf-8"), newline=False).decode("ascii")
        authorization = f"Basic {token}"
    return Proxy(target.host, target.port, authorization, variable)


__all__ = ["Proxy", "ProxySettings"]
