"""TLS with a throwaway certificate: CA from SSL_CERT_FILE, verification failures, setup errors, SNI, ALPN."""

from __future__ import annotations

import asyncio
import ssl
import sys
import threading
from pathlib import Path

import pytest

from dsh.adapters.http import ConnectError, HttpClient, TlsSetupError, default_ssl_context
from dsh.adapters.http.tls import TlsContextCache
from tests.adapters.http.conftest import Certificate
from tests.adapters.http.helpers import Exchange, RawServer, response


def recording_context(certificate: Certificate, seen: list[str | None]) -> ssl.SSLContext:
    """A server context that records the SNI name of each handshake and offers ALPN http/1.1."""
    context = certificate.server_context()
    context.set_alpn_protocols(["http/1.1"])

    def on_sni(ssl_object: ssl.SSLObject, server_name: str | None, context: ssl.SSLContext) -> None:
        seen.append(server_name)

    context.sni_callback = on_sni
    return context


async def test_https_with_the_ca_from_ssl_cert_file(certificate: Certificate, monkeypatch: pytest.MonkeyPatch) -> None:
    """TLS success with that CA as SSL_CERT_FILE: SNI is the host, ALPN http/1.1, keep-alive works"""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate.cert))
    names: list[str | None] = []
    alpn: list[str | None] = []

    async def answer(exchange: Exchange) -> bool:
        alpn.append(exchange.writer.get_extra_info("ssl_object").selected_alpn_protocol())
        await exchange.send(response(200, b"secure"))
        return True

    async with (
        RawServer(answer, response(200, b"again"), ssl_context=recording_context(certificate, names)) as server,
        HttpClient() as client,
    ):
        first = await client.send("GET", server.url(host="localhost"))
        assert await first.read() == b"secure"
        second = await client.send("GET", server.url(host="localhost"))
        assert await second.read() == b"again"
        assert server.connections == 1
    assert names == ["localhost"]
    assert alpn == ["http/1.1"]
    assert server.requests[0].header("host") == f"localhost:{server.port}"


async def test_an_ip_address_is_verified_against_the_certificate(
    certificate: Certificate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(extra) https://127.0.0.1 verifies the IP in the certificate (no SNI is sent for an address)"""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate.cert))
    names: list[str | None] = []
    async with (
        RawServer(response(200, b"ip"), ssl_context=recording_context(certificate, names)) as server,
        HttpClient() as client,
    ):
        assert await (await client.send("GET", server.url())).read() == b"ip"
    assert names == [None]


async def test_an_untrusted_certificate_is_a_connect_error(certificate: Certificate) -> None:
    """TLS failure (verify error → ConnectError) without the CA, the ssl error as cause"""
    async with RawServer(response(200), ssl_context=certificate.server_context()) as server, HttpClient() as client:
        with pytest.raises(ConnectError, match="TLS handshake") as caught:
            await client.send("GET", server.url())
        assert isinstance(caught.value.__cause__, ssl.SSLCertVerificationError)
        assert "SSL_CERT_FILE" in str(caught.value)
        assert client.idle_count == 0


async def test_a_bad_ssl_cert_file_is_a_tls_setup_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """a bad SSL_CERT_FILE → TlsSetupError naming the variable, raised by the first https request"""
    bad = tmp_path / "not-a-bundle.pem"
    bad.write_text("this is no certificate\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(bad))
    async with HttpClient() as client:
        with pytest.raises(TlsSetupError, match="SSL_CERT_FILE") as caught:
            await client.send("GET", "https://127.0.0.1:9/")
        assert caught.value.url == "https://127.0.0.1:9/"
        assert str(bad) in str(caught.value)
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
        with pytest.raises(TlsSetupError, match="point SSL_CERT_FILE at a readable PEM bundle"):
            client.prepare_tls()
        assert isinstance(caught.value.__cause__, ssl.SSLError | OSError)


async def test_ssl_cert_dir_is_used_when_set(
    certificate: Certificate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(extra) SSL_CERT_DIR alone replaces the default store: an empty directory trusts nothing"""
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    async with RawServer(response(200), ssl_context=certificate.server_context()) as server, HttpClient() as client:
        with pytest.raises(ConnectError, match="TLS handshake"):
            await client.send("GET", server.url())


async def test_a_given_context_is_used_as_it_is(
    certificate: Certificate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(extra) ssl_context= wins over the environment, which is then never read"""
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    context = certificate.client_context()
    async with (
        RawServer(response(200, b"given"), ssl_context=certificate.server_context()) as server,
        HttpClient(ssl_context=context) as client,
    ):
        assert client.prepare_tls() is context
        assert await (await client.send("GET", server.url())).read() == b"given"


def test_trust_env_false_ignores_the_ca_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) trust_env=False: SSL_CERT_FILE is not read (a bad one does no harm)"""
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    context = HttpClient(trust_env=False).prepare_tls()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname


def test_without_certifi_the_system_store_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) certifi is optional: without it the system's default CA store is loaded"""
    monkeypatch.setitem(sys.modules, "certifi", None)
    context = default_ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED


async def test_prepare_tls_builds_once_even_from_several_threads() -> None:
    """(extra) prepare_tls is thread-safe and idempotent: every caller gets the same context"""
    client = HttpClient()
    results: list[ssl.SSLContext] = []
    start = threading.Barrier(4)

    def build() -> None:
        start.wait()
        results.append(client.prepare_tls())

    threads = [threading.Thread(target=build) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    assert all(context is results[0] for context in results)
    assert await asyncio.to_thread(client.prepare_tls) is results[0]
    assert client.prepare_tls() is results[0]


def test_a_failed_build_is_retried_by_the_next_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) a TLS setup error is not cached: fixing the variable makes the next call succeed"""
    cache = TlsContextCache()
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(TlsSetupError):
        cache.get()
    monkeypatch.delenv("SSL_CERT_FILE")
    assert cache.get() is cache.get()
