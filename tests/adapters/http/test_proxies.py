"""Proxies over real connections: forward requests, CONNECT tunnels, credentials, NO_PROXY, refusals."""

from __future__ import annotations

import base64
import socket

import pytest

from dsh.adapters.http import ConnectError, HttpClient, ProxyError
from tests.adapters.http.conftest import Certificate
from tests.adapters.http.helpers import ProxyServer, RawServer, response, silence

BASIC = "Basic " + base64.b64encode(b"user:s3cret").decode()


async def test_an_http_target_goes_to_the_proxy_in_absolute_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """forward proxy: absolute-form request line, Basic credentials, keep-alive to the proxy"""
    async with ProxyServer() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.proxy_url.replace("http://", "http://user:s3cret@"))
        async with HttpClient() as client:
            first = await client.send("GET", "http://api.example.com/v1/x?y=1")
            assert await first.read() == b"proxied http://api.example.com/v1/x?y=1"
            second = await client.send("POST", "http://api.example.com:8080/z", {}, b"body")
            assert await second.read() == b"proxied http://api.example.com:8080/z"
    assert proxy.lines == [
        "GET http://api.example.com/v1/x?y=1 HTTP/1.1",
        "POST http://api.example.com:8080/z HTTP/1.1",
    ]
    assert proxy.authorizations == [BASIC, BASIC]
    assert proxy.connections == 2  # one per origin, each kept alive


async def test_an_https_target_goes_through_a_connect_tunnel(
    certificate: Certificate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CONNECT + TLS: the tunnel is opened with credentials, then upgraded with start_tls and reused"""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate.cert))
    async with (
        RawServer(
            response(200, b"tunnelled"), response(200, b"again"), ssl_context=certificate.server_context()
        ) as server,
        ProxyServer() as proxy,
    ):
        monkeypatch.setenv("https_proxy", proxy.proxy_url.replace("http://", "http://user:s3cret@"))
        monkeypatch.setenv("HTTPS_PROXY", "socks5://ignored:1")  # the lower-case variable wins
        async with HttpClient() as client:
            first = await client.send("GET", server.url("/secret", host="localhost"))
            assert await first.read() == b"tunnelled"
            second = await client.send("GET", server.url("/again", host="localhost"))
            assert await second.read() == b"again"
        assert proxy.lines == [f"CONNECT localhost:{server.port} HTTP/1.1"]
        assert proxy.authorizations == [BASIC]
        assert [request.line for request in server.requests] == ["GET /secret HTTP/1.1", "GET /again HTTP/1.1"]
        assert (proxy.connections, server.connections) == (1, 1)


async def test_no_proxy_goes_direct(monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_PROXY bypass: a listed host is reached directly; the proxy sees nothing"""
    async with ProxyServer() as proxy, RawServer(response(200, b"direct")) as server:
        monkeypatch.setenv("HTTP_PROXY", proxy.proxy_url)
        monkeypatch.setenv("NO_PROXY", "example.org, 127.0.0.1")
        async with HttpClient() as client:
            assert await (await client.send("GET", server.url())).read() == b"direct"
        assert proxy.connections == 0
        assert server.requests[0].line == "GET / HTTP/1.1"


async def test_trust_env_false_ignores_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) trust_env=False: no proxy, even with HTTP_PROXY set"""
    monkeypatch.setenv("HTTP_PROXY", "socks5://nowhere:1")
    async with RawServer(response(200, b"direct")) as server, HttpClient(trust_env=False) as client:
        assert await (await client.send("GET", server.url())).read() == b"direct"


@pytest.mark.parametrize("value", ["socks5://127.0.0.1:1080", "https://127.0.0.1:8443"])
async def test_an_unsupported_proxy_is_a_proxy_error(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """socks → ProxyError naming the variable, before any connection"""
    monkeypatch.setenv("ALL_PROXY", value)
    async with HttpClient() as client:
        with pytest.raises(ProxyError, match="ALL_PROXY") as caught:
            await client.send("GET", "https://api.example.com/")
        assert caught.value.url == "https://api.example.com/"
        assert "only http:// proxies are supported" in str(caught.value)


async def test_a_proxy_answering_407_is_a_proxy_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """a proxy answering 407 → ProxyError with the status, reason and where to fix the credentials"""
    refusal = response(407, b"no", [("proxy-authenticate", 'Basic realm="x"')], reason="Proxy Authentication Required")
    async with ProxyServer(refuse=refusal) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.proxy_url)
        async with HttpClient() as client:
            with pytest.raises(ProxyError) as caught:
                await client.send("GET", "https://api.example.com/")
        message = str(caught.value)
        assert "407 Proxy Authentication Required" in message
        assert "check the credentials in HTTPS_PROXY" in message
        assert "api.example.com:443" in message
        await proxy.wait_disconnects(1)


async def test_a_proxy_refusing_with_another_status(monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) any non-2xx answer to CONNECT is a ProxyError carrying it"""
    async with ProxyServer(refuse=response(403, b"", reason="Forbidden")) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.proxy_url)
        async with HttpClient() as client:
            with pytest.raises(ProxyError, match="403 Forbidden") as caught:
                await client.send("GET", "https://api.example.com/")
        assert "credentials" not in str(caught.value)


async def test_a_proxy_closing_without_answer_is_a_proxy_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) a proxy that hangs up on CONNECT: ProxyError with the read error as cause"""
    async with ProxyServer(refuse=b"") as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.proxy_url)
        async with HttpClient() as client:
            with pytest.raises(ProxyError, match="failed while opening a tunnel") as caught:
                await client.send("GET", "https://api.example.com/")
        assert caught.value.__cause__ is not None


async def test_a_proxy_talking_before_the_handshake_is_a_proxy_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) bytes after the CONNECT answer, before TLS starts, are refused"""
    async with RawServer(silence) as target, ProxyServer(connect_reply=b"HTTP/1.1 200 OK\r\n\r\nEXTRA") as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.proxy_url)
        async with HttpClient() as client:
            with pytest.raises(ProxyError, match="sent data before the TLS handshake"):
                await client.send("GET", target.url(scheme="https"))


async def test_an_untrusted_target_behind_a_tunnel_is_a_connect_error(
    certificate: Certificate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(extra) the TLS handshake through the tunnel verifies the target like a direct one"""
    async with (
        RawServer(response(200), ssl_context=certificate.server_context()) as server,
        ProxyServer() as proxy,
    ):
        monkeypatch.setenv("HTTPS_PROXY", proxy.proxy_url)
        async with HttpClient() as client:
            with pytest.raises(ConnectError, match="TLS handshake"):
                await client.send("GET", server.url())


async def test_an_unreachable_proxy_is_a_connect_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) a refused proxy connection: ConnectError saying it went through the proxy"""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
        async with HttpClient() as client:
            with pytest.raises(ConnectError, match=f"through the proxy http://127.0.0.1:{port}"):
                await client.send("GET", "http://api.example.com/")
