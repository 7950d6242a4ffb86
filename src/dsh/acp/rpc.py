"""The server side of one ACP client connection, on the SDK's ``acp.connection.Connection``.

The SDK's connection correlates requests and responses, runs each incoming request
and notification in its own task (in arrival order: a ``session/cancel`` is handled
while a ``session/prompt`` waits) and sends the requests to the client. This module
gives it the method table (:class:`Router`) and the frame layer
(:class:`~dsh.acp.frames.FrameTransport`), and owns the connection's lifetime.

* **Errors.** Unknown method → ``-32601`` (``data.method``); params that fail
  validation against the ``acp.schema`` models → ``-32602 Invalid params`` with the
  problems under ``data.errors`` (no urls, inputs or contexts). A handler raises the
  SDK's ``RequestError`` for a deliberate error (:func:`invalid_params`,
  :func:`internal_error`: the detail is in the message, there is no ``data``); any
  other exception becomes ``-32603 Internal error`` with its message under ``data``
  (see :func:`~dsh.acp.frames.error_data`). Notifications never answer: their
  failures are logged (a deliberate refusal at debug level). A notification method
  sent as a request (with an id) runs its handler and is answered ``null`` (or its
  error). Every request is answered exactly once.
* **Requests to the client.** :meth:`RpcServer.request` returns the result; an error
  response raises ``RequestError``, the end of the connection ``ConnectionError``.
* **Notifications to the client.** :meth:`RpcServer.notify` is synchronous: it
  enqueues the frame at once, so updates and answers keep the order they were made in.
* **Lifetime.** :meth:`RpcServer.start` begins reading. At end of input the requests
  already received finish and are answered first; then ``on_close`` runs, what still
  runs is awaited, and the connection closes. :meth:`RpcServer.aclose` stops reading
  and runs ``on_close`` at once (the handlers still running must then finish promptly).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from acp.connection import Connection
from acp.exceptions import RequestError
from pydantic import BaseModel, ValidationError

from dsh.acp.frames import INTERNAL_ERROR, INVALID_PARAMS, FrameTransport, error_data
from dsh.acp.transport import LineTransport
from dsh.kernel import Logger

RequestHandler = Callable[[Any], Awaitable[Any]]
"""``handler(params) -> result``: a JSON value or an ``acp.schema`` model; raise ``RequestError`` to fail."""

NotificationHandler = Callable[[Any], None]
"""``handler(params)``: runs synchronously in its own task; a raise is logged."""


def invalid_params(detail: str) -> RequestError:
    """``-32602 Invalid params: <detail>`` (no data)."""
    return RequestError(INVALID_PARAMS, f"Invalid params: {detail}")


def internal_error(detail: str) -> RequestError:
    """``-32603 Internal error: <detail>`` (no data)."""
    return RequestError(INTERNAL_ERROR, f"Internal error: {detail}")


def unexpected_error(error: BaseException) -> RequestError:
    """The ``-32603 Internal error`` an unexpected exception becomes (its message under ``data``)."""
    return RequestError(INTERNAL_ERROR, "Internal error", error_data(error))


def validation_error(error: ValidationError) -> RequestError:
    """``-32602 Invalid params`` with pydantic's problems (no urls, contexts or inputs) under ``data.errors``."""
    errors = json.loads(error.json(include_url=False, include_context=False, include_input=False))
    return RequestError(INVALID_PARAMS, "Invalid params", {"errors": errors})


def result_json(result: Any) -> Any:
    """A handler's result as the JSON the client receives (a schema model without its unset fields)."""
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    return result


class Router:
    """The method table the SDK connection calls (``await router(method, params, is_notification)``)."""

    def __init__(
        self,
        requests: Mapping[str, RequestHandler],
        notifications: Mapping[str, NotificationHandler],
        logger: Logger,
    ) -> None:
        self._requests = dict(requests)
        self._notifications = dict(notifications)
        self._logger = logger
        self.running: set[asyncio.Future[Any]] = set()
        """The tasks inside a handler right now."""

    async def __call__(self, method: str, params: Any, is_notification: bool) -> Any:
        task = asyncio.current_task()
        assert task is not None  # the connection runs every message in a task of its own
        self.running.add(task)
        try:
            if is_notification:
                self._notified(method, params)
                return None
            return await self._answer(method, params)
        finally:
            self.running.discard(task)

    def _notified(self, method: str, params: Any) -> None:
        handler = self._notifications.get(method)
        if handler is None:
            self._logger.debug("acp: ignoring unknown notification %s", method)
            return
        try:
            handler(params)
        except RequestError as error:  # deliberate, and nobody to answer: not worth a warning
            self._logger.debug("acp: notification %s refused: %s", method, error)
        except Exception as error:
            self._logger.warn("acp: notification %s failed: %s", method, error)

    async def _answer(self, method: str, params: Any) -> Any:
        handler = self._requests.get(method)
        if handler is None:
            notification = self._notifications.get(method)
            if notification is None:
                raise RequestError.method_not_found(method)
            notification(params)  # a notification sent with an id: answered null
            return None
        try:
            return result_json(await handler(params))
        except RequestError:
            raise
        except ValidationError as error:
            raise validation_error(error) from error
        except Exception as error:
            self._logger.warn("acp: %s failed: %s", method, error)
            raise unexpected_error(error) from error


class RpcServer:
    """One client connection (see the module docstring); owns its frame layer and its tasks."""

    def __init__(
        self,
        transport: LineTransport,
        *,
        requests: Mapping[str, RequestHandler],
        notifications: Mapping[str, NotificationHandler],
        logger: Logger,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._lines = transport
        self._router = Router(requests, notifications, logger)
        self._logger = logger
        self._on_close = on_close
        self._frames: FrameTransport | None = None
        self._connection: Connection | None = None
        self._runner: asyncio.Task[None] | None = None
        self._aborted = asyncio.Event()

    def start(self) -> None:
        """Begin reading (once); must be called inside the running event loop."""
        if self._runner is None:
            self._frames = FrameTransport(self._lines, self._logger)
            self._connection = Connection(self._router, self._frames)
            self._runner = asyncio.get_running_loop().create_task(self._serve(), name="acp: connection")

    @property
    def closed(self) -> bool:
        """True once the connection has finished (end of input handled, transport closed)."""
        return self._runner is not None and self._runner.done()

    async def wait_closed(self) -> None:
        """Return once the connection has finished; cancelling the caller does not stop it."""
        if self._runner is not None:
            await asyncio.wait({self._runner})

    async def aclose(self) -> None:
        """Stop reading now and run ``on_close`` without waiting for the handlers first."""
        self._aborted.set()
        if self._frames is not None:
            self._frames.stop()
        await self.wait_closed()

    def notify(self, method: str, params: Any) -> None:
        """Send a notification now (enqueued in order); raises if it cannot be encoded."""
        if self._frames is None:
            raise ConnectionError("the connection has not started")
        self._frames.write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        """Send a request to the client and return its result (see the module docstring)."""
        if self._connection is None:
            raise ConnectionError("the connection has not started")
        return await self._connection.send_request(method, params)

    async def _drain(self) -> None:
        """Wait for the running handlers, unless :meth:`aclose` asks to stop first."""
        running = self._router.running
        if not running:
            return
        aborted = asyncio.ensure_future(self._aborted.wait())
        try:
            while running and not aborted.done():
                await asyncio.wait({*running, aborted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()

    async def _serve(self) -> None:
        frames, connection = self._frames, self._connection
        assert frames is not None  # set by start() before this task runs
        assert connection is not None
        await frames.ended.wait()
        await asyncio.sleep(0)  # the last message read is dispatched before draining
        await self._drain()  # end of input: what was asked is still answered
        if self._on_close is not None:
            try:
                await self._on_close()
            except Exception as error:
                self._logger.error("acp: connection-close teardown failed: %s", error)
        while self._router.running:
            await asyncio.wait(set(self._router.running))
        await asyncio.sleep(0)  # the last answers are written by their tasks after the handler returns
        try:
            await connection.close()
        except Exception as error:
            self._logger.warn("acp: closing the transport failed: %s", error)
