"""The hardened frame layer under the ACP SDK's connection: JSON-RPC messages over a line transport.

:class:`FrameTransport` is the message-level ``Transport`` the SDK's
``acp.connection.Connection`` runs on (``receive`` / ``send`` / ``close``). It exists
because the SDK's own newline transport drops a frame it cannot decode without an
answer and hands any JSON value to the connection, where a non-object or a malformed
response ends the receive loop. Here nothing a client sends can end the server:

* **Decoding.** A line that is not JSON, or nests deeper than the decoder can follow,
  is answered ``-32700 Parse error`` (id null). A value that is not a JSON-RPC 2.0
  message, or whose id is not a string, a finite number or null (``NaN``,
  ``Infinity``), is answered ``-32600 Invalid Request`` (with its id when that id is
  valid). Blank lines are skipped. Only well-formed messages reach the connection; a
  response's ``error`` is normalized to an object with an integer code and a text
  message first, and a response with an invalid id is dropped.
* **Order.** :meth:`FrameTransport.write` encodes and enqueues synchronously, and
  :meth:`FrameTransport.send` never suspends before it has: frames reach the client in
  exactly the order they were produced (a prompt's updates before its answer).
* **Encoding.** Frames are compact JSON with lone surrogates escaped. An error
  without data carries no ``data`` key. A response whose result JSON cannot hold (a
  NaN, a cycle, a foreign object) is answered ``-32603 Internal error`` instead.
* **Failures.** A response that cannot be written is logged; a request or a
  notification that cannot be written raises ``ConnectionError`` naming its method.
* **End.** :meth:`FrameTransport.receive` returns None at end of input, when reading
  fails (logged), or once :meth:`FrameTransport.stop` was called; :attr:`ended` is
  set then. :meth:`FrameTransport.close` closes the line transport.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping
from typing import Any, Final

from dsh.acp.transport import LineTransport
from dsh.core.persistence import escape_lone_surrogates
from dsh.core.session import dumps_json
from dsh.kernel import Logger

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603


def encode_frame(frame: Mapping[str, Any]) -> str:
    """Compact JSON (no spaces, UTF-8 kept, key order kept, lone surrogates escaped).

    Raises ``ValueError`` (NaN), ``TypeError`` (a value JSON cannot hold) or
    ``RecursionError`` (a cycle), as :func:`~dsh.core.session.dumps_json` does.
    """
    return escape_lone_surrogates(dumps_json(frame))


def error_data(error: BaseException) -> object:
    """The ``data`` of the ``-32603 Internal error`` an unexpected exception becomes.

    ``{}`` for an empty message, the parsed value when the message is JSON, else
    ``{"details": <message>}``.
    """
    text = str(error)
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {"details": text}


def valid_id(value: object) -> bool:
    """True for a JSON-RPC id this server answers with: a string, a finite number or null."""
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _error_frame(request_id: object, code: int, message: str, data: object = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _response(message: dict[str, Any]) -> dict[str, Any]:
    """A response whose ``error`` (when present) is an object with an int code and a str message."""
    if "error" not in message:
        return message
    error = message["error"]
    if not isinstance(error, dict):
        error = {}
    code, text = error.get("code"), error.get("message")
    normal = {
        "code": code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
        "message": text if isinstance(text, str) else "the client answered with an error",
    }
    if "data" in error:
        normal["data"] = error["data"]
    return {"jsonrpc": "2.0", "id": message["id"], "error": normal}


class FrameTransport:
    """See the module docstring; ``lines`` is owned by this transport once :meth:`close` runs."""

    def __init__(self, lines: LineTransport, logger: Logger) -> None:
        self._lines = lines
        self._logger = logger
        self._stopped: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.ended = asyncio.Event()
        """Set once :meth:`receive` has returned None (no more input will be read)."""

    def stop(self) -> None:
        """Stop reading now: the pending :meth:`receive` (and every later one) returns None."""
        if not self._stopped.done():
            self._stopped.set_result(None)

    # ----------------------------------------------------------------- reading
    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message; None at the end (see the module docstring)."""
        while True:
            line = await self._read_line()
            if line is None:
                self.ended.set()
                return None
            message = self._decode(line)
            if message is not None:
                return message

    async def _read_line(self) -> str | None:
        if self._stopped.done():
            return None
        pending = asyncio.ensure_future(self._lines.read_line())
        waits: set[asyncio.Future[Any]] = {pending, self._stopped}
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if not pending.done():  # stopped while waiting
            pending.cancel()
            return None
        try:
            return pending.result()
        except Exception as error:
            self._logger.warn("acp: reading from the client failed; closing the connection: %s", error)
            return None

    def _decode(self, line: str) -> dict[str, Any] | None:
        if not line.strip():
            return None
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested beyond the decoder's depth
            self.write(_error_frame(None, PARSE_ERROR, "Parse error"))
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._invalid(message)
            return None
        method = message.get("method")
        has_id = "id" in message
        if method is None and has_id and ("result" in message or "error" in message):
            if not valid_id(message["id"]):
                self._logger.debug("acp: ignoring a response to id %s: no request waits for it", message["id"])
                return None
            return _response(message)
        if not isinstance(method, str) or (has_id and not valid_id(message["id"])):
            self._invalid(message)
            return None
        return message

    def _invalid(self, message: object) -> None:
        request_id = message.get("id") if isinstance(message, dict) else None
        self.write(_error_frame(request_id if valid_id(request_id) else None, INVALID_REQUEST, "Invalid Request"))

    # ----------------------------------------------------------------- writing
    async def send(self, message: dict[str, Any]) -> None:
        """:meth:`write` (the connection's entry point; it never suspends)."""
        self.write(message)

    def write(self, message: Mapping[str, Any]) -> None:
        """Encode ``message`` and enqueue it now (see the module docstring for failures)."""
        if "error" in message:
            error = message["error"]
            message = _error_frame(message.get("id"), error["code"], error["message"], error.get("data"))
        try:
            line = encode_frame(message)
        except (TypeError, ValueError, RecursionError) as failure:  # a NaN, a value JSON cannot hold, a cycle
            if "result" not in message:
                raise
            self._logger.warn("acp: a result could not be encoded: %s", failure)
            line = encode_frame(_error_frame(message["id"], INTERNAL_ERROR, "Internal error", error_data(failure)))
        try:
            self._lines.write_line(line)
        except Exception as failure:
            if "method" in message:  # a request or a notification: its sender learns it was not sent
                raise ConnectionError(f"could not send {message['method']}: {failure}") from failure
            self._logger.warn("acp: could not send a response: %s", failure)

    async def close(self) -> None:
        """Stop reading and close the line transport (flushing what was enqueued)."""
        self.stop()
        await self._lines.aclose()
