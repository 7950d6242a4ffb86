"""URL parsing: http and https only, default ports, IPv6 literals, verbatim targets, no credentials."""

from __future__ import annotations

import pytest

from dsh.adapters.http import InvalidUrlError, Url, parse_url


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://example.com", Url("http", "example.com", 80, "/")),
        ("https://example.com", Url("https", "example.com", 443, "/")),
        ("HTTPS://API.Example.COM:8443/v1/x", Url("https", "api.example.com", 8443, "/v1/x")),
        ("http://127.0.0.1:9/a/b?c=d&e=%20f", Url("http", "127.0.0.1", 9, "/a/b?c=d&e=%20f")),
        ("http://[::1]/x", Url("http", "::1", 80, "/x")),
        ("https://[2001:DB8::1]:4443", Url("https", "2001:db8::1", 4443, "/")),
        ("http://host?q=1", Url("http", "host", 80, "/?q=1")),
        ("http://host/path#fragment", Url("http", "host", 80, "/path")),
        ("http://host#fragment", Url("http", "host", 80, "/")),
        ("http://host:/x", Url("http", "host", 80, "/x")),
        ("http://host/a//b/../c;p?x=/y", Url("http", "host", 80, "/a//b/../c;p?x=/y")),
        ("http://host/caf\u00e9?q=\u00fc", Url("http", "host", 80, "/caf%C3%A9?q=%C3%BC")),
        ("http://b\u00fccher.example/", Url("http", "xn--bcher-kva.example", 80, "/")),
    ],
)
def test_parses_http_and_https_urls(text: str, expected: Url) -> None:
    """(extra) scheme and host lower-cased, default ports, path and query verbatim, fragment dropped"""
    assert parse_url(text) == expected


def test_url_parts_for_the_wire() -> None:
    """(extra) Host header carries the port only when it is not the default; CONNECT names host:port"""
    plain = parse_url("http://example.com/x")
    assert (plain.host_header, plain.authority, plain.origin, str(plain)) == (
        "example.com",
        "example.com:80",
        "http://example.com",
        "http://example.com/x",
    )
    odd = parse_url("https://[::1]:8443/y?z")
    assert (odd.host_header, odd.authority, str(odd)) == ("[::1]:8443", "[::1]:8443", "https://[::1]:8443/y?z")
    assert parse_url("https://h:443/").host_header == "h"
    assert repr(plain) == "Url('http', 'example.com', 80, '/x')"
    assert hash(plain) == hash(parse_url("http://EXAMPLE.com:80/x"))
    assert plain != "http://example.com/x"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("example.com/x", "has no scheme"),
        ("ftp://example.com/", "scheme 'ftp' is not supported"),
        ("ws://example.com/", "only http:// and https://"),
        ("http://user:secret@example.com/", "contains credentials"),
        ("http:///path", "has no host"),
        ("http://:80/", "has no host"),
        ("http://exa mple.com/", "invalid host"),
        ("http://example.com:0/", "invalid port '0'"),
        ("http://example.com:65536/", "use 1-65535"),
        ("http://example.com:http/", "invalid port"),
        ("http://example.com:123456/", "invalid port"),
        ("http://[::1/", "malformed IPv6"),
        ("http://[::1]x/", "malformed IPv6"),
        ("http://[nothex::1]/", "invalid IPv6 address"),
        ("http://::1/", "invalid host"),
        ("http://host/a b", "spaces or control characters"),
        ("http://host/a\r\nInjected: 1", "spaces or control characters"),
        ("http://host/\x7f", "spaces or control characters"),
        ("http://" + "\u00e9" * 70 + ".com/", "IDNA cannot encode"),
    ],
)
def test_rejects_urls_it_cannot_request(text: str, fragment: str) -> None:
    """(extra) InvalidUrlError saying what is wrong (and how to fix it)"""
    with pytest.raises(InvalidUrlError) as caught:
        parse_url(text)
    assert fragment in str(caught.value)
    assert caught.value.url is not None


def test_credentials_never_appear_in_the_error() -> None:
    """(extra) userinfo in the target URL is rejected, and the secret is not echoed back"""
    with pytest.raises(InvalidUrlError) as caught:
        parse_url("https://user:hunter2@example.com/x?y")
    assert "hunter2" not in str(caught.value)
    assert "authorization header" in str(caught.value)
    assert caught.value.url == "https://***@example.com/x?y"
