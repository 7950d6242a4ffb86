"""The adapter's HTTP transport (aiohttp) against real local servers on 127.0.0.1.

Framings (content-length, chunked, gzip), keep-alive reuse, a server that closes
mid-stream, an HTTP forward proxy from the environment (plain and CONNECT), and TLS with a
throwaway certificate made by the ``openssl`` command. Keep-alive reuse over 20 and 150
sequential streams is in ``test_connection.py``; cancellation that drops the connection
instead of pooling it (200 cancels in a row on a one-connection session) in
``test_cancel.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import shutil
import ssl
import subprocess
from pathlib import Path

import aiohttp
import pytest

import dsh.adapters.deepseek as deepseek
from dsh.adapters.deepseek import DeepSeekAdapter
from dsh.core.errors import LlmError
from dsh.core.llm import FinishChunk, LlmService, StopFinish, StreamChunk, TextDeltaChunk, text
from dsh.kernel import Context
from dsh.testing.wire import Reply, TextDelta, WireServer, text_reply
from tests.adapters.deepseek.helpers import collect, kinds, options

KEY = "sk-test"
EVENTS = b'data: {"choices":[{"delta":{"content":"over the wire"}}]}\n\ndata: [DONE]\n\n'
"""One text event and the end, as the provider streams them."""


def chunked(*pieces: bytes) -> bytes:
    """``pieces`` in chunked transfer encoding, terminator included."""
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"


def answer(body: bytes, *fields: str) -> bytes:
    """A 200 event-stream answer with the given extra header fields."""
    head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n" + "".join(f"{field}\r\n" for field in fields)
    return head.encode() + b"\r\n" + body


class LocalServer:
    """A server on 127.0.0.1 whose connection handlers are cancelled and awaited on exit."""

    ssl_context: ssl.SSLContext | None = None

    def __init__(self) -> None:
        self.port = 0
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[object]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for handler in self._handlers:
            handler.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError, asyncio.CancelledError):  # stopped
                await self.serve(reader, writer)
        finally:
            writer.close()
            self._handlers.discard(task)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


class ScriptedServer(LocalServer):
    """Answers every request on 127.0.0.1 with ``response`` (keep-alive), optionally over TLS.

    Reads each request's head and its content-length body; counts connections.
    """

    def __init__(self, response: bytes, ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__()
        self.response = response
        self.ssl_context = ssl_context
        self.total_connections = 0
        self.requests: list[bytes] = []

    async def __aenter__(self) -> ScriptedServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.total_connections += 1
        while head := await reader.readuntil(b"\r\n\r\n"):
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.lower().split(b"\r\n")
                    if line.startswith(b"content-length:")
                ),
                0,
            )
            await reader.readexactly(length)
            self.requests.append(head)
            writer.write(self.response)
            await writer.drain()


async def test_a_content_length_body_streams() -> None:
    """a plain HTTP answer framed by content-length"""
    async with ScriptedServer(answer(EVENTS, f"content-length: {len(EVENTS)}")) as server:
        async with DeepSeekAdapter(KEY, f"http://127.0.0.1:{server.port}") as adapter:
            for _ in range(2):
                chunks = await collect(adapter.stream(options()))
                assert chunks[1] == TextDeltaChunk(index=0, text="over the wire")
        assert server.total_connections == 1
        assert server.requests[0].startswith(b"POST /chat/completions HTTP/1.1\r\n")


async def test_a_chunked_body_split_inside_an_event_streams() -> None:
    """chunked transfer encoding, with chunk boundaries that cut an event in two"""
    cut = EVENTS.index(b"wire")
    body = chunked(EVENTS[:cut], EVENTS[cut:])
    async with ScriptedServer(answer(body, "transfer-encoding: chunked")) as server:
        adapter = DeepSeekAdapter(KEY, f"http://127.0.0.1:{server.port}")
        async with adapter:
            chunks = await collect(adapter.stream(options()))
    assert chunks[1] == TextDeltaChunk(index=0, text="over the wire")
    assert chunks[-1] == FinishChunk(reason=StopFinish())


async def test_a_gzip_encoded_chunked_stream_is_decoded() -> None:
    """a gzip-encoded event stream sent in several chunks is decoded by aiohttp as it arrives"""
    packed = gzip.compress(EVENTS)
    third = len(packed) // 3
    body = chunked(packed[:third], packed[third : 2 * third], packed[2 * third :])
    async with ScriptedServer(answer(body, "transfer-encoding: chunked", "content-encoding: gzip")) as server:
        async with DeepSeekAdapter(KEY, f"http://127.0.0.1:{server.port}") as adapter:
            for _ in range(2):
                chunks = await collect(adapter.stream(options()))
                assert chunks[1] == TextDeltaChunk(index=0, text="over the wire")
        assert server.total_connections == 1


async def test_a_server_closing_mid_stream_is_STREAM_CLOSED_and_the_next_call_connects_anew(
    server: WireServer,
) -> None:
    """a cut-off chunked body fails the stream after its chunks; the connection is not reused"""
    server.add(Reply([TextDelta("partial")], ending="cut"), text_reply("fresh"))
    async with DeepSeekAdapter(KEY, server.base_url) as adapter:
        seen: list[StreamChunk] = []
        with pytest.raises(LlmError) as caught:
            async for chunk in adapter.stream(options()):
                seen.append(chunk)
        assert caught.value.code == "STREAM_CLOSED"
        assert isinstance(caught.value.__cause__, aiohttp.ClientPayloadError)
        assert kinds(seen) == ["block-start", "text-delta"]
        assert (await collect(adapter.stream(options())))[1] == TextDeltaChunk(index=0, text="fresh")
    assert server.total_connections == 2


class ForwardProxy(LocalServer):
    """A small HTTP forward proxy on 127.0.0.1: absolute-form requests and CONNECT tunnels.

    Records the first request line of each client connection, then pipes bytes both
    ways (an absolute-form request line is rewritten to origin form for the upstream).
    """

    def __init__(self) -> None:
        super().__init__()
        self.request_lines: list[bytes] = []
        self.heads: list[bytes] = []

    async def __aenter__(self) -> ForwardProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, rest = head.split(b"\r\n", 1)
        self.request_lines.append(line)
        self.heads.append(head)
        method, target, version = line.split(b" ")
        if method == b"CONNECT":
            host, port = target.split(b":")
            up_reader, up_writer = await asyncio.open_connection(host.decode(), int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            authority, _, path = target.removeprefix(b"http://").partition(b"/")
            host, port = authority.split(b":")
            up_reader, up_writer = await asyncio.open_connection(host.decode(), int(port))
            kept = b"".join(field for field in rest.splitlines(True) if not field.lower().startswith(b"proxy-auth"))
            up_writer.write(b" ".join([method, b"/" + path, version]) + b"\r\n" + kept)
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            up_writer.close()

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        sink.close()


@pytest.fixture
def proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy or CA settings from the developer's shell: tests set the ones they need."""
    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(variable, raising=False)
        monkeypatch.delenv(variable.lower(), raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    return monkeypatch


async def test_HTTP_PROXY_from_the_environment_carries_the_streams(
    server: WireServer, proxy_env: pytest.MonkeyPatch
) -> None:
    """with HTTP_PROXY set, requests go through the proxy, kept alive; NO_PROXY bypasses it"""
    server.add(text_reply("proxied"), text_reply("again"), text_reply("direct"))
    async with ForwardProxy() as proxy:
        proxy_env.setenv("HTTP_PROXY", proxy.url)
        async with DeepSeekAdapter(KEY, server.base_url) as adapter:
            for word in ("proxied", "again"):
                assert (await collect(adapter.stream(options())))[1] == TextDeltaChunk(index=0, text=word)
        assert proxy.request_lines == [f"POST {server.base_url}/chat/completions HTTP/1.1".encode()]
        proxy_env.setenv("NO_PROXY", "127.0.0.1")
        async with DeepSeekAdapter(KEY, server.base_url) as adapter:
            assert (await collect(adapter.stream(options())))[1] == TextDeltaChunk(index=0, text="direct")
        assert len(proxy.request_lines) == 1


async def test_credentials_in_the_proxy_URL_are_sent_to_the_proxy_only(
    server: WireServer, proxy_env: pytest.MonkeyPatch
) -> None:
    """user:password in HTTP_PROXY becomes the proxy-authorization header; the server never sees it"""
    server.add(text_reply("authorized"))
    async with ForwardProxy() as proxy:
        proxy_env.setenv("HTTP_PROXY", proxy.url.replace("http://", "http://dsh:s3cret@"))
        async with DeepSeekAdapter(KEY, server.base_url) as adapter:
            assert (await collect(adapter.stream(options())))[1] == TextDeltaChunk(index=0, text="authorized")
    assert b"proxy-authorization: basic zhnoonmzy3jlda==\r\n" in proxy.heads[0].lower()  # dsh:s3cret
    assert "proxy-authorization" not in server.requests[0].headers


async def test_a_proxy_that_is_not_listening_fails_with_NETWORK(
    server: WireServer, proxy_env: pytest.MonkeyPatch
) -> None:
    """a dead HTTP_PROXY fails the call before any answer: NETWORK, naming the URL"""
    async with ForwardProxy() as proxy:
        dead = proxy.url
    proxy_env.setenv("HTTP_PROXY", dead)
    async with DeepSeekAdapter(KEY, server.base_url) as adapter:
        with pytest.raises(LlmError) as caught:
            await collect(adapter.stream(options()))
    assert caught.value.code == "NETWORK"
    assert f"{server.base_url}/chat/completions" in str(caught.value)
    assert server.requests == []


# ------------------------------------------------------------------------------ TLS
@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A throwaway self-signed certificate for 127.0.0.1 and its key, made by ``openssl``."""
    if shutil.which("openssl") is None:  # pragma: no cover -- the image ships the openssl command
        pytest.skip("the openssl command is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def tls_server_context(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    return context


async def test_TLS_with_a_throwaway_certificate_trusted_through_SSL_CERT_FILE(
    root: Context,
    llm: LlmService,
    certificate: tuple[Path, Path],
    tls_server_context: ssl.SSLContext,
    proxy_env: pytest.MonkeyPatch,
) -> None:
    """the plugin prepares TLS in a thread from SSL_CERT_FILE; https streams share one connection"""
    proxy_env.setenv("SSL_CERT_FILE", str(certificate[0]))
    body = chunked(EVENTS)
    async with ScriptedServer(answer(body, "transfer-encoding: chunked"), tls_server_context) as server:
        fiber = await root.plugin(deepseek, {"apiKey": KEY, "baseURL": f"https://127.0.0.1:{server.port}"})
        for _ in range(2):
            result = await llm.generate(options())
            assert result.message.content == (text("over the wire"),)
        await fiber.dispose()
    assert server.total_connections == 1


async def test_TLS_through_a_CONNECT_tunnel_from_HTTPS_PROXY(
    certificate: tuple[Path, Path], tls_server_context: ssl.SSLContext, proxy_env: pytest.MonkeyPatch
) -> None:
    """with HTTPS_PROXY set, an https stream goes through a verified CONNECT tunnel; credentials go on CONNECT"""
    proxy_env.setenv("SSL_CERT_FILE", str(certificate[0]))
    async with (
        ScriptedServer(answer(chunked(EVENTS), "transfer-encoding: chunked"), tls_server_context) as server,
        ForwardProxy() as proxy,
    ):
        proxy_env.setenv("HTTPS_PROXY", proxy.url.replace("http://", "http://dsh:s3cret@"))
        async with DeepSeekAdapter(KEY, f"https://127.0.0.1:{server.port}") as adapter:
            chunks = await collect(adapter.stream(options()))
    assert b"proxy-authorization: basic zhnoonmzy3jlda==\r\n" in proxy.heads[0].lower()  # dsh:s3cret
    assert b"proxy-authorization" not in server.requests[0].lower()
    assert chunks[1] == TextDeltaChunk(index=0, text="over the wire")
    assert proxy.request_lines == [f"CONNECT 127.0.0.1:{server.port} HTTP/1.1".encode()]


async def test_a_certificate_nobody_trusts_fails_with_NETWORK(
    tls_server_context: ssl.SSLContext, proxy_env: pytest.MonkeyPatch
) -> None:
    """without the throwaway CA in the trust store, the handshake fails: NETWORK naming the URL"""
    async with ScriptedServer(answer(chunked(EVENTS), "transfer-encoding: chunked"), tls_server_context) as server:
        url = f"https://127.0.0.1:{server.port}"
        async with DeepSeekAdapter(KEY, url) as adapter:
            with pytest.raises(LlmError) as caught:
                await collect(adapter.stream(options()))
    assert caught.value.code == "NETWORK"
    assert f"{url}/chat/completions" in str(caught.value)
    assert isinstance(caught.value.__cause__, aiohttp.ClientSSLError)
