"""A small JSON-RPC 2.0 server connection over a :class:`~dsh.acp.transport.LineTransport`.

Hand-rolled rather than the ``agent-client-protocol`` SDK's so that the bridge
controls what the reference clients compare: error texts (a deliberate error has no
``data``), the key order of every frame, and the order of frames on the wire.

* **Order.** Every outgoing frame is serialized and enqueued on the transport
  synchronously, when it is issued; there is one writer, so notifications and
  responses reach the client in exactly the order they were produced.
* **Concurrency.** Each request and notification runs in its own task, started in
  arrival order: a ``session/cancel`` is handled while a ``session/prompt`` waits.
* **Errors.** Malformed input never ends the connection: not JSON (or nested deeper
  than the decoder can follow) → ``-32700``; not a JSON-RPC 2.0 message, or an id that
  is not a string, a finite number or null (``NaN``, ``Infinity``) → ``-32600`` with id
  null; unknown method → ``-32601``; params that fail
  validation (pydantic) → ``-32602`` with the problems under ``data.errors``. A
  handler raises :class:`RequestError` for a deliberate error; any other exception
  becomes ``-32603 Internal error`` with its message under ``data`` (``{"details":
  ...}``, the parsed value when the message is itself JSON, ``{}`` when empty).
  Notifications never answer: their failures are logged (a deliberate
  :class:`RequestError` at debug level). A notification method sent
  as a request (with an id) runs its handler and is answered: ``null``, or its error.
  Every request is answered exactly once.
* **Requests to the client.** :meth:`JsonRpcConnection.request` sends a request (ids
  ``0, 1, ...``, a space apart from the client's) and waits for its response: a result
  is returned, an error response raises :class:`RequestError`, and the end of the
  connection raises ``ConnectionError``. Cancelling the caller forgets the request (a
  late answer is then ignored, like any response nobody waits for).
* **Lifetime.** :meth:`JsonRpcConnection.start` begins reading. At end of input the
  requests already received finish and are answered first; then the connection runs
  ``on_close``, waits for what is still running, and closes the transport.
  :meth:`JsonRpcConnection.aclose` stops reading and runs ``on_close`` at once (the
  handlers still running must then finish promptly).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from pydantic import ValidationError

from dsh.acp.transport import LineTransport
from dsh.core.persistence import escape_lone_surrogates
from dsh.core.session import dumps_json
from dsh.kernel import Logger

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

RequestHandler = Callable[[Any], Awaitable[Any]]
"""``handler(params) -> result``: the result must be JSON; raise :class:`RequestError` to fail."""

NotificationHandler = Callable[[Any], None]
"""``handler(params)``: runs synchronously in its own task; a raise is logged."""

_NO_DATA: Final = object()


class RequestError(Exception):
    """A deliberate JSON-RPC error: ``{"code", "message"}`` plus ``data`` only when given."""

    def __init__(self, code: int, message: str, data: object = _NO_DATA) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @classmethod
    def invalid_params(cls, detail: str) -> RequestError:
        """``-32602 Invalid params: <detail>``."""
        return cls(INVALID_PARAMS, f"Invalid params: {detail}")

    @classmethod
    def internal_error(cls, detail: str) -> RequestError:
        """``-32603 Internal error: <detail>``."""
        return cls(INTERNAL_ERROR, f"Internal error: {detail}")

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not _NO_DATA:
            error["data"] = self.data
        return error


def encode_frame(frame: Mapping[str, Any]) -> str:
    """Compact JSON (no spaces, UTF-8 kept, key order kept, lone surrogates escaped).

    Raises ``ValueError`` (NaN), ``TypeError`` (a value JSON cannot hold) or
    ``RecursionError`` (a cycle), as :func:`~dsh.core.session.dumps_json` does.
    """
    return escape_lone_surrogates(dumps_json(frame))


def unexpected_error(error: BaseException) -> RequestError:
    """The ``-32603 Internal error`` an unexpected exception becomes (message moved to ``data``)."""
    text = str(error)
    data: object
    if not text:
        data = {}
    else:
        try:
            data = json.loads(text)
        except ValueError:
            data = {"details": text}
    return RequestError(INTERNAL_ERROR, "Internal error", data)


def _validation_error(error: ValidationError) -> RequestError:
    errors = json.loads(error.json(include_url=False, include_context=False, include_input=False))
    return RequestError(INVALID_PARAMS, "Invalid params", {"errors": errors})


def _valid_id(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class JsonRpcConnection:
    """The server side of one client connection; see the module docstring.

    ``requests`` / ``notifications`` map method names to handlers. ``on_close`` runs
    once reading has stopped (its failure is logged as a connection-close teardown
    failure). The connection owns its tasks: :meth:`wait_closed` returns when all are
    done and the transport is closed.
    """

    def __init__(
        self,
        transport: LineTransport,
        *,
        requests: Mapping[str, RequestHandler],
        notifications: Mapping[str, NotificationHandler],
        logger: Logger,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._transport = transport
        self._requests = dict(requests)
        self._notifications = dict(notifications)
        self._logger = logger
        self._on_close = on_close
        self._handlers: set[asyncio.Task[None]] = set()
        self._reader: asyncio.Task[None] | None = None
        self._runner: asyncio.Task[None] | None = None
        self._aborted = asyncio.Event()
        self._outgoing: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 0
        self._ended = False

    # ---------------------------------------------------------------- lifetime
    def start(self) -> None:
        """Begin reading (once); must be called inside the running event loop."""
        if self._runner is None:
            loop = asyncio.get_running_loop()
            self._reader = loop.create_task(self._read(), name="acp: read")
            self._runner = loop.create_task(self._serve(self._reader), name="acp: connection")

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
        if self._reader is not None:
            self._reader.cancel()
        await self.wait_closed()

    async def _read(self) -> None:
        transport = self._transport
        while True:
            try:
                line = await transport.read_line()
            except Exception as error:
                self._logger.warn("acp: reading from the client failed; closing the connection: %s", error)
                return
            if line is None:
                return
            self._receive(line)

    async def _drain(self) -> None:
        """Wait for the running handlers, unless :meth:`aclose` asks to stop first."""
        if not self._handlers:
            return
        aborted = asyncio.ensure_future(self._aborted.wait())
        try:
            while self._handlers and not aborted.done():
                await asyncio.wait({*self._handlers, aborted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()

    async def _serve(self, reader: asyncio.Task[None]) -> None:
        await asyncio.wait({reader})
        self._end_requests()
        await self._drain()  # end of input: what was asked is still answered
        if self._on_close is not None:
            try:
                await self._on_close()
            except Exception as error:
                self._logger.error("acp: connection-close teardown failed: %s", error)
        while self._handlers:
            await asyncio.wait(set(self._handlers))
        try:
            await self._transport.aclose()
        except Exception as error:
            self._logger.warn("acp: closing the transport failed: %s", error)

    def _end_requests(self) -> None:
        """No response can arrive any more: fail every request still waiting for one."""
        self._ended = True
        outgoing, self._outgoing = self._outgoing, {}
        for future in outgoing.values():
            future.set_exception(ConnectionError("the client closed the connection"))

    # ----------------------------------------------------------------- writing
    def _write(self, frame: Mapping[str, Any]) -> None:
        self._transport.write_line(encode_frame(frame))

    def notify(self, method: str, params: Any) -> None:
        """Send a notification now (enqueued in order); raises if it cannot be written."""
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        """Send a request to the client and return its result (see the module docstring).

        Raises :class:`RequestError` for an error response, ``ConnectionError`` when the
        connection has ended (or ends first) or the frame cannot be written.
        """
        if self._ended:
            raise ConnectionError("the client closed the connection")
        request_id = self._next_id
        self._next_id += 1
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._outgoing[request_id] = answer
        try:
            self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            await asyncio.wait({answer})
        finally:
            self._outgoing.pop(request_id, None)
        return answer.result()

    def _answered(self, message: dict[str, Any]) -> None:
        """A response from the client: settle the request waiting for it (if any still does)."""
        answer = self._outgoing.pop(message["id"], None) if _valid_id(message["id"]) else None
        if answer is None:
            self._logger.debug("acp: ignoring a response to id %s: no request waits for it", message["id"])
        elif "error" in message:
            error = message["error"]
            if not isinstance(error, dict):
                error = {}
            code, text = error.get("code"), error.get("message")
            answer.set_exception(
                RequestError(
                    code if isinstance(code, int) else INTERNAL_ERROR,
                    text if isinstance(text, str) else "the client answered with an error",
                    error.get("data", _NO_DATA),
                )
            )
        else:
            answer.set_result(message["result"])

    def _send_error(self, request_id: Any, error: RequestError) -> None:
        try:
            self._write({"jsonrpc": "2.0", "id": request_id, "error": error.to_json()})
        except Exception as failure:
            self._logger.warn("acp: could not send an error response: %s", failure)

    def _send_result(self, request_id: Any, result: Any) -> None:
        try:
            line = encode_frame({"jsonrpc": "2.0", "id": request_id, "result": result})
        except (TypeError, ValueError, RecursionError) as error:  # a NaN, a value JSON cannot hold, a cycle
            self._send_error(request_id, unexpected_error(error))
            return
        try:
            self._transport.write_line(line)
        except Exception as failure:
            self._logger.warn("acp: could not send a response: %s", failure)

    # -------------------------------------------------------------- dispatching
    def _receive(self, line: str) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested beyond the decoder's depth
            self._send_error(None, RequestError(PARSE_ERROR, "Parse error"))
            return
        self._dispatch(message)

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._invalid(message)
            return
        method = message.get("method")
        has_id = "id" in message
        if method is None and has_id and ("result" in message or "error" in message):
            self._answered(message)
            return
        if not isinstance(method, str) or (has_id and not _valid_id(message["id"])):
            self._invalid(message)
            return
        params = message.get("params")
        if has_id:
            request_id = message["id"]
            handler = self._requests.get(method) or self._as_request(method)
            if handler is None:
                self._send_error(request_id, RequestError(METHOD_NOT_FOUND, "Method not found", {"method": method}))
                return
            self._spawn(self._answer(request_id, method, handler, params))
            return
        notification = self._notifications.get(method)
        if notification is None:
            self._logger.debug("acp: ignoring unknown notification %s", method)
            return
        self._spawn(self._notified(method, notification, params))

    def _as_request(self, method: str) -> RequestHandler | None:
        """A notification method sent with an id: run it, then answer ``null`` (or its error)."""
        notification = self._notifications.get(method)
        if notification is None:
            return None

        async def answer(params: Any) -> None:
            notification(params)

        return answer

    def _invalid(self, message: object) -> None:
        request_id = message.get("id") if isinstance(message, dict) else None
        self._send_error(
            request_id if _valid_id(request_id) else None, RequestError(INVALID_REQUEST, "Invalid Request")
        )

    def _spawn(self, work: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)

    async def _answer(self, request_id: Any, method: str, handler: RequestHandler, params: Any) -> None:
        try:
            result = await handler(params)
        except RequestError as error:
            self._send_error(request_id, error)
        except ValidationError as error:
            self._send_error(request_id, _validation_error(error))
        except Exception as error:
            self._logger.warn("acp: %s failed: %s", method, error)
            self._send_error(request_id, unexpected_error(error))
        else:
            self._send_result(request_id, result)

    async def _notified(self, method: str, handler: NotificationHandler, params: Any) -> None:
        try:
            handler(params)
        except RequestError as error:  # deliberate, and nobody to answer: not worth a warning
            self._logger.debug("acp: notification %s refused: %s", method, error.message)
        except Exception as error:
            self._logger.warn("acp: notification %s failed: %s", method, error)
