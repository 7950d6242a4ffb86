"""The client's TLS context: built once, lazily or ahead of time in a worker thread.

:func:`default_ssl_context` verifies servers against, in order of preference:

1. ``$SSL_CERT_FILE`` / ``$SSL_CERT_DIR`` when set and non-empty (and the environment
   is trusted);
2. the ``certifi`` bundle when the package is importable;
3. the system's default CA store.

It offers ALPN ``http/1.1`` (the only protocol the client speaks). A CA file or directory
that cannot be loaded raises :class:`TlsSetupError` naming the variable to fix.
:class:`TlsContextCache` builds that context at most once per client, under a lock, so a
worker thread may build it (``HttpClient.prepare_tls``) while the event loop goes on.
"""

from __future__ import annotations

import os
import ssl
import threading
from collections.abc import Mapping

from dsh.adapters.http.errors import TlsSetupError


def default_ssl_context(*, trust_env: bool = True, environ: Mapping[str, str] | None = None) -> ssl.SSLContext:
    """A verifying client context; see the module docstring. Loading a CA bundle takes tens of milliseconds."""
    source = os.environ if environ is None else environ
    cafile = (source.get("SSL_CERT_FILE") or None) if trust_env else None
    capath = (source.get("SSL_CERT_DIR") or None) if trust_env else None
    if cafile is not None or capath is not None:
        try:
            context = ssl.create_default_context(cafile=cafile, capath=capath)
        except (OSError, ValueError) as error:  # ssl.SSLError is an OSError
            variable, value = ("SSL_CERT_FILE", cafile) if cafile is not None else ("SSL_CERT_DIR", capath)
            raise TlsSetupError(
                f"cannot load the CA certificates named by {variable}={value!r}: {error} "
                f"(point {variable} at a readable PEM bundle, or unset it)"
            ) from error
    else:
        context = ssl.create_default_context(cafile=_certifi_bundle())
    context.set_alpn_protocols(["http/1.1"])
    return context


def _certifi_bundle() -> str | None:
    """``certifi.where()`` when certifi is installed, else None (the system store)."""
    try:
        import certifi
    except ImportError:
        return None
    where: str = certifi.where()
    return where


class TlsContextCache:
    """One client's TLS context: ``context`` when given, else :func:`default_ssl_context` built on first use.

    :meth:`get` is thread-safe and idempotent: concurrent callers wait for one build.
    A failed build raises :class:`TlsSetupError` and is retried by the next call.
    """

    def __init__(self, context: ssl.SSLContext | None = None, *, trust_env: bool = True) -> None:
        self._context = context
        self._trust_env = trust_env
        self._lock = threading.Lock()

    def get(self) -> ssl.SSLContext:
        """The context, building it now if needed (on the caller's thread)."""
        with self._lock:
            if self._context is None:
                self._context = default_ssl_context(trust_env=self._trust_env)
            return self._context


__all__ = ["TlsContextCache", "default_ssl_context"]
