"""A lean HTTP/1.1 client for the model adapters: keep-alive pool, streaming bodies, TLS, http proxies.

It imports only the standard library (``certifi`` lazily, when present) and costs a few
milliseconds to import. The parts:

* :class:`HttpClient` -- ``await client.send(method, url, headers, body)`` returns an
  :class:`HttpResponse` once the head arrived; iterate it for the body, ``aclose()`` it;
* :class:`Headers` -- response header fields, looked up without regard to case;
* the error tree rooted at :class:`HttpError` (see :mod:`dsh.adapters.http.errors`);
* :func:`parse_url`, :class:`ResponseParser`, :func:`default_ssl_context`,
  :class:`ProxySettings` -- the pieces, public for tests and embedding.

The contract (framing, keep-alive and retry, timeouts, TLS, proxies, what is not
supported) is in ``docs/http.md``.
"""

from dsh.adapters.http.client import HttpClient
from dsh.adapters.http.errors import (
    ClientClosedError,
    ConnectError,
    ConnectTimeoutError,
    DecodingError,
    HttpError,
    HttpTimeoutError,
    InvalidRequestError,
    InvalidUrlError,
    ProxyError,
    ReadError,
    ReadTimeoutError,
    RemoteProtocolError,
    TlsSetupError,
    WriteError,
    WriteTimeoutError,
)
from dsh.adapters.http.parse import Headers, ResponseHead, ResponseParser
from dsh.adapters.http.proxy import Proxy, ProxySettings
from dsh.adapters.http.request import RequestHeaders
from dsh.adapters.http.response import HttpResponse
from dsh.adapters.http.tls import default_ssl_context
from dsh.adapters.http.url import Url, parse_url

__all__ = [
    "ClientClosedError",
    "ConnectError",
    "ConnectTimeoutError",
    "DecodingError",
    "Headers",
    "HttpClient",
    "HttpError",
    "HttpResponse",
    "HttpTimeoutError",
    "InvalidRequestError",
    "InvalidUrlError",
    "Proxy",
    "ProxyError",
    "ProxySettings",
    "ReadError",
    "ReadTimeoutError",
    "RemoteProtocolError",
    "RequestHeaders",
    "ResponseHead",
    "ResponseParser",
    "TlsSetupError",
    "Url",
    "WriteError",
    "WriteTimeoutError",
    "default_ssl_context",
    "parse_url",
]
