"""The DeepSeek adapter's HTTP transport: an ``aiohttp`` session, its TLS context, its failures.

:func:`new_session` builds the ONE ``aiohttp.ClientSession`` an adapter owns: a keep-alive
pool and the bound :data:`CONNECT_TIMEOUT`; :data:`READ_TIMEOUT` is the adapter's own
bound on each read (aiohttp's ``sock_read`` would re-arm a timer for every piece of a
streamed body). :func:`env_proxy`
reads the proxy of the adapter's URL from ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY``
(credentials from the proxy URL or ``~/.netrc``), once, when that session is created:
aiohttp's own ``trust_env`` would look them up in a worker thread on every request, which
costs about 0.8 ms of CPU per request on a 2-core machine. aiohttp is imported there,
not when this module is, so importing the adapter stays cheap; :func:`warm_up` lets a
worker thread pay for that import (and the TLS context) during the boot.

:func:`load_ssl_context` builds the verifying TLS context of ``https`` requests from, in
order of preference, ``$SSL_CERT_FILE`` / ``$SSL_CERT_DIR``, the ``certifi`` bundle when
installed, the system store. A CA file or directory that cannot be loaded raises
``LlmError`` ``NETWORK`` naming the variable to fix.

:func:`network_error` turns an aiohttp failure before the answer arrived into the
``NETWORK`` error that names the URL and where to fix it.
"""

from __future__ import annotations

import os
import ssl
from typing import TYPE_CHECKING

from dsh.core.errors import LlmError, error_message

if TYPE_CHECKING:
    import aiohttp
    from yarl import URL

CONNECT_TIMEOUT = 30.0
"""Seconds to open a connection (TCP, TLS handshake, proxy tunnel), waiting for a free pool slot included."""

READ_TIMEOUT = 300.0
"""Seconds each read of the answer may wait (the head included): thinking can be slow.

The adapter keeps this bound itself (``DeepSeekAdapter(read_timeout=...)``)."""


def new_session() -> aiohttp.ClientSession:
    """A keep-alive session bounding each connection by :data:`CONNECT_TIMEOUT` (call it on the loop)."""
    import aiohttp  # here, not at module level: importing aiohttp costs more than the rest of the adapter

    timeout = aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT)
    return aiohttp.ClientSession(timeout=timeout)


def env_proxy(url: str) -> tuple[URL | None, str | None]:
    """The proxy the environment gives for ``url`` and its ``proxy-authorization`` value, else None.

    A URL that cannot be parsed has no proxy: the request itself then fails (``NETWORK``).
    """
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        proxy, auth = get_env_proxy_for_url(URL(url))
    except (LookupError, ValueError):  # no proxy for it (or bypassed by NO_PROXY), or not a URL
        return None, None
    return proxy, (auth.encode() if auth is not None else None)


def warm_up(url: str, tls: bool) -> ssl.SSLContext | None:
    """Import aiohttp now and, when ``tls``, return :func:`load_ssl_context` (for a worker thread)."""
    import aiohttp  # noqa: F401  -- the import is the point: it takes tens of milliseconds

    return load_ssl_context(url) if tls else None


def load_ssl_context(url: str) -> ssl.SSLContext:
    """The verifying TLS context for ``url``'s requests (see the module docstring); tens of milliseconds."""
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    if cafile is None and capath is None:
        return ssl.create_default_context(cafile=_certifi_bundle())
    try:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    except (OSError, ValueError) as error:  # ssl.SSLError is an OSError
        variable, value = ("SSL_CERT_FILE", cafile) if cafile is not None else ("SSL_CERT_DIR", capath)
        raise LlmError(
            f"cannot set up TLS for {url}: cannot load the CA certificates named by {variable}={value!r}: "
            f"{error} (point {variable} at a readable PEM bundle, or unset it)",
            "NETWORK",
            cause=error,
        ) from error


def _certifi_bundle() -> str | None:
    """``certifi.where()`` when certifi is installed, else None (the system store)."""
    try:
        import certifi
    except ImportError:  # pragma: no cover -- certifi comes with the openai SDK's dependencies
        return None
    where: str = certifi.where()
    return where


def network_error(url: str, error: aiohttp.ClientError) -> LlmError:
    """The ``NETWORK`` failure of a request that got no answer, naming where to fix it."""
    import aiohttp

    if isinstance(error, aiohttp.InvalidURL):
        message = f"DeepSeek API URL {url!r} is invalid (check baseURL / $DEEPSEEK_BASE_URL)"
    else:
        message = (
            f"DeepSeek API request to {url} failed: {error_message(error)} "
            "(check baseURL / $DEEPSEEK_BASE_URL and the network)"
        )
    return LlmError(message, "NETWORK", cause=error)


__all__ = [
    "CONNECT_TIMEOUT",
    "READ_TIMEOUT",
    "env_proxy",
    "load_ssl_context",
    "network_error",
    "new_session",
    "warm_up",
]
