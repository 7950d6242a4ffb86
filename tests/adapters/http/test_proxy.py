"""Proxy selection from the environment: which variable applies, NO_PROXY matching, credentials."""

from __future__ import annotations

import base64

import pytest

from dsh.adapters.http import Proxy, ProxyError, ProxySettings, parse_url


def settings(**variables: str) -> ProxySettings:
    found = ProxySettings.from_environ(variables)
    assert found is not None
    return found


def proxy_for(url: str, **variables: str) -> Proxy | None:
    return settings(**variables).proxy_for(parse_url(url))


def test_no_variable_means_no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) without any *_proxy variable (empty ones count as unset) there is nothing to consult"""
    assert ProxySettings.from_environ({}) is None
    assert ProxySettings.from_environ({"http_proxy": "", "NO_PROXY": "*"}) is None
    assert ProxySettings.from_environ() is None  # the real environment, cleaned by the fixture
    monkeypatch.setenv("HTTPS_PROXY", "http://p:1")
    found = ProxySettings.from_environ()
    assert found is not None
    assert found.variables == {"HTTPS_PROXY": "http://p:1"}


@pytest.mark.parametrize(
    ("variables", "url", "expected"),
    [
        ({"HTTP_PROXY": "http://up:1"}, "http://h/", ("up", "HTTP_PROXY")),
        ({"http_proxy": "http://low:1", "HTTP_PROXY": "http://up:1"}, "http://h/", ("low", "http_proxy")),
        ({"HTTPS_PROXY": "http://up:1"}, "https://h/", ("up", "HTTPS_PROXY")),
        ({"https_proxy": "http://low:1", "HTTPS_PROXY": "http://up:1"}, "https://h/", ("low", "https_proxy")),
        ({"ALL_PROXY": "http://all:1"}, "https://h/", ("all", "ALL_PROXY")),
        ({"all_proxy": "http://low:1", "ALL_PROXY": "http://all:1"}, "http://h/", ("low", "all_proxy")),
        ({"ALL_PROXY": "http://all:1", "HTTPS_PROXY": "http://s:1"}, "https://h/", ("s", "HTTPS_PROXY")),
        ({"HTTPS_PROXY": "http://s:1"}, "http://h/", None),
        ({"HTTP_PROXY": "http://p:1"}, "https://h/", None),
    ],
)
def test_picks_the_variable_for_the_scheme_lower_case_first(
    variables: dict[str, str], url: str, expected: tuple[str, str] | None
) -> None:
    """(extra) http_proxy / https_proxy for their scheme, then all_proxy; lower case wins, as in curl"""
    proxy = proxy_for(url, **variables)
    assert (None if proxy is None else (proxy.host, proxy.variable)) == expected


def test_parses_the_proxy_url() -> None:
    """(extra) no scheme means http; the default port is 80; credentials become Basic (percent-decoded)"""
    bare = proxy_for("http://h/", HTTP_PROXY="proxy.local")
    assert bare == Proxy("proxy.local", 80, None, "HTTP_PROXY")
    full = proxy_for("http://h/", HTTP_PROXY="HTTP://us%40er:p%3Ass@[::1]:3128/ignored")
    assert full is not None
    assert (full.host, full.port, full.url) == ("::1", 3128, "http://[::1]:3128")
    assert full.authorization == "Basic " + base64.b64encode(b"us@er:p:ss").decode()
    user_only = proxy_for("http://h/", HTTP_PROXY="http://token@p:1")
    assert user_only is not None
    assert user_only.authorization == "Basic " + base64.b64encode(b"token:").decode()
    assert repr(full) == "<Proxy http://[::1]:3128 from HTTP_PROXY, credentials>"
    assert repr(bare) == "<Proxy http://proxy.local:80 from HTTP_PROXY>"
    assert hash(bare) == hash(Proxy("proxy.local", 80, None, "HTTP_PROXY"))
    assert bare != ("proxy.local", 80)


@pytest.mark.parametrize("value", ["socks5://p:1080", "socks5h://p:1080", "https://p:443"])
def test_unsupported_proxy_schemes_name_the_variable(value: str) -> None:
    """socks → ProxyError: naming the variable, saying only http:// proxies are supported (or NO_PROXY)"""
    found = settings(HTTPS_PROXY=value)
    with pytest.raises(ProxyError) as caught:
        found.proxy_for(parse_url("https://api.example.com/"))
    message = str(caught.value)
    assert "HTTPS_PROXY" in message
    assert "only http:// proxies are supported" in message
    assert "NO_PROXY" in message


def test_an_invalid_proxy_url_names_the_variable() -> None:
    """(extra) a proxy URL that does not parse is a ProxyError saying which variable to fix"""
    with pytest.raises(ProxyError, match="fix all_proxy"):
        proxy_for("http://h/", all_proxy="http://p:99999")


@pytest.mark.parametrize(
    ("no_proxy", "url", "bypassed"),
    [
        ("*", "http://anything/", True),
        ("example.com", "http://example.com/", True),
        ("example.com", "http://api.example.com/", True),
        ("example.com", "http://badexample.com/", False),
        (".example.com", "http://example.com/", True),
        (".example.com", "http://deep.api.example.com/", True),
        ("EXAMPLE.com", "http://Api.Example.Com/", True),
        ("example.com:8080", "http://example.com:8080/", True),
        ("example.com:8080", "http://example.com/", False),
        ("127.0.0.1", "http://127.0.0.1:9/", True),
        ("0.0.1", "http://127.0.0.1/", False),
        ("127.0.0.1:9", "http://127.0.0.1:10/", False),
        ("::1", "http://[::1]/", True),
        ("[::1]", "http://[0:0::1]/", True),
        ("[::1]:8080", "http://[::1]:8080/", True),
        ("[::1]:8080", "http://[::1]/", False),
        ("10.0.0.0/8", "http://10.1.2.3/", True),
        ("10.0.0.0/8", "http://11.0.0.1/", False),
        ("10.0.0.0/8:80", "http://10.1.2.3/", True),
        ("10.0.0.0/8", "http://ten.example/", False),
        ("fd00::/8", "http://[fd12::1]/", True),
        ("127.0.0.1", "http://localhost/", False),
        ("localhost", "http://127.0.0.1/", False),
        (" other.org , example.com ", "http://example.com/", True),
        ("host:abc, [::1]x, 10.0.0.0/99, ., [::1]:x, ,", "http://host/", False),
    ],
)
def test_no_proxy_matching(no_proxy: str, url: str, bypassed: bool) -> None:
    """NO_PROXY bypass: '*', host suffixes with or without a dot, an optional port, exact IPs, CIDR blocks"""
    proxy = proxy_for(url, HTTP_PROXY="http://p:1", NO_PROXY=no_proxy)
    assert (proxy is None) is bypassed


def test_lower_case_no_proxy_wins_and_bypass_skips_bad_proxies() -> None:
    """(extra) no_proxy over NO_PROXY; a bypassed host never sees the unsupported proxy's error"""
    found = settings(HTTPS_PROXY="socks5://p:1", no_proxy="internal", NO_PROXY="*")
    assert found.proxy_for(parse_url("https://internal/")) is None
    with pytest.raises(ProxyError):
        found.proxy_for(parse_url("https://external/"))


def test_the_choice_is_cached_per_origin() -> None:
    """(extra) one lookup per (scheme, host, port)"""
    found = settings(HTTP_PROXY="http://p:1")
    first = found.proxy_for(parse_url("http://h/a"))
    assert first is not None
    assert found.proxy_for(parse_url("http://h/b")) is first
