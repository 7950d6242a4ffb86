"""The errors of the HTTP client: one tree, every lower-layer failure wrapped.

::

    Exception
     └── HttpError(message, url=None)          .url: the request's URL where known
          ├── InvalidUrlError                  not http(s), bad host/port, credentials in the URL
          ├── InvalidRequestError              CR/LF/NUL in a header, bad method, transfer-encoding
          ├── ConnectError                     refused, unresolvable, TLS handshake failed
          ├── ReadError                        reset, or the body ended before its framing said
          ├── WriteError                       the connection was lost while sending the request
          ├── RemoteProtocolError              the server broke HTTP/1.1 (status line, headers, chunks)
          ├── DecodingError                    unsupported or corrupt content-encoding
          ├── ProxyError                       unsupported proxy scheme, or the proxy refused CONNECT
          ├── TlsSetupError                    the CA bundle named by SSL_CERT_FILE/SSL_CERT_DIR cannot load
          ├── ClientClosedError                send() after HttpClient.aclose()
          └── HttpTimeoutError (also TimeoutError)
               ├── ConnectTimeoutError         TCP connect + TLS handshake + proxy CONNECT
               ├── WriteTimeoutError           the request could not be sent in time
               └── ReadTimeoutError            no response bytes for read_timeout seconds

An ``OSError`` or ``ssl.SSLError`` is never raised as such: it is the ``__cause__`` of
one of these. ``asyncio.CancelledError`` is never wrapped.
"""

from __future__ import annotations


class HttpError(Exception):
    """Base of every error the HTTP client raises; ``url`` is the request URL when known."""

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.url = url

    def __str__(self) -> str:
        return self.message


class InvalidUrlError(HttpError):
    """The URL cannot be requested (scheme, host, port, credentials or characters)."""


class InvalidRequestError(HttpError):
    """The request cannot be sent as given (header injection, bad method or header name)."""


class ConnectError(HttpError):
    """No connection could be opened (refused, unresolvable host, TLS handshake failure)."""


class ReadError(HttpError):
    """The response could not be read to its end (connection reset or closed too early)."""


class WriteError(HttpError):
    """The connection was lost while the request was being sent."""


class RemoteProtocolError(HttpError):
    """The server's answer is not valid HTTP/1.x."""


class DecodingError(HttpError):
    """The body's ``content-encoding`` is unsupported, or its data is corrupt."""


class ProxyError(HttpError):
    """The proxy settings are unsupported, or the proxy refused to open a tunnel."""


class TlsSetupError(HttpError):
    """The TLS configuration (CA file or directory) cannot be loaded."""


class ClientClosedError(HttpError):
    """The client was closed; create a new one."""


class HttpTimeoutError(HttpError, TimeoutError):
    """A timeout of the HTTP client; also a builtin ``TimeoutError``."""


class ConnectTimeoutError(HttpTimeoutError):
    """Opening the connection (TCP, TLS handshake, proxy tunnel) took longer than ``connect_timeout``."""


class WriteTimeoutError(HttpTimeoutError):
    """The request could not be handed to the network within ``write_timeout``."""


class ReadTimeoutError(HttpTimeoutError):
    """No response bytes arrived within ``read_timeout``."""


__all__ = [
    "ClientClosedError",
    "ConnectError",
    "ConnectTimeoutError",
    "DecodingError",
    "HttpError",
    "HttpTimeoutError",
    "InvalidRequestError",
    "InvalidUrlError",
    "ProxyError",
    "ReadError",
    "ReadTimeoutError",
    "RemoteProtocolError",
    "TlsSetupError",
    "WriteError",
    "WriteTimeoutError",
]
