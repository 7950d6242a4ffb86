"""Reading stored events back in bulk: decoding JSON text and checking event shapes fast.

Loading a long log parses every stored event, so this path is tuned for volume while
giving exactly the verdicts of :func:`dsh.core.session.parse_session_event` (SPEC §3.1):

* :func:`loads_stored_json` decodes one JSON text like ``json.loads`` but refuses the
  non-JSON constants (``NaN``, ``Infinity``) and numbers that overflow to infinity, so
  everything it returns is a JSON value;
* :func:`parse_event_lines` and :func:`parse_event_rows` decode many stored events and
  check each: one with a common, exactly typed shape is accepted in place (checked by
  hand: no copy, no pydantic); every other value goes to ``parse_session_event`` for the
  exact verdict and error message;
* :func:`paused_gc` pauses the cyclic garbage collector around a bulk decode (both bulk
  functions use it), which allocates millions of long-lived objects and would otherwise
  trigger repeated collections over the growing heap.

Soundness of the fast path: it accepts a value only when every key is one the shape
names and every leaf is an exact ``str``/``int``/``bool`` of the type the shape requires
(no extra keys, no floats, no ``null``, bounded nesting), which ``parse_session_event``
always accepts unchanged. Anything unusual (unknown event or block types with payload,
extra keys, lax values) takes the exact path, so only speed depends on this module.
"""

from __future__ import annotations

import gc
import json
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from dsh.core.errors import HarnessError
from dsh.core.session import SessionEvent, parse_session_event

_MAX_NESTING = 4
"""Tool-result blocks nested deeper than this take the exact path."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text} does not fit a finite float")
    return number


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
_raw_decode = _DECODER.raw_decode


def loads_stored_json(text: str) -> Any:
    """Decode the JSON text ``text`` (one value, surrounding whitespace allowed).

    Raises ``ValueError`` (``json.JSONDecodeError`` for syntax) when ``text`` is not
    exactly one JSON value, holds ``NaN``/``Infinity``, or a number beyond float range;
    ``RecursionError`` when it nests deeper than the interpreter allows. The result is
    fresh and belongs to the caller.
    """
    try:
        value, end = _raw_decode(text)
        if end == len(text):
            return value
    except ValueError:
        pass
    return _DECODER.decode(text)  # whitespace around the value, or the exact error


# ----------------------------------------------------------------- shape checks
# Each check returns True only for an exactly typed shape; False means "take the exact path".
_KNOWN_SOURCES = frozenset({"user", "plugin", "agent"})
_KNOWN_TRIGGERS = frozenset({"message", "continuation", "injection"})
_BARE_TURN_ENDS = frozenset({"completed", "disposed", "max-tokens", "interrupted"})
_KNOWN_TURN_ENDS = frozenset({"completed", "aborted", "error", "disposed", "max-tokens", "interrupted"})
_BARE_FINISHES = frozenset({"stop", "tool-calls", "max-tokens", "aborted"})
_KNOWN_FINISHES = frozenset({"stop", "tool-calls", "max-tokens", "aborted", "error"})
_OPTIONAL_TOKENS = ("cacheReadTokens", "cacheWriteTokens", "reasoningTokens")


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


def _optional_str(value: dict[str, Any], key: str) -> int:
    """1 when ``key`` holds a str, 0 when absent, -1 for anything else."""
    if key not in value:
        return 0
    return 1 if type(value[key]) is str else -1


def _only_kind(value: dict[str, Any], kind: str, known: frozenset[str]) -> bool:
    """``{"kind": <str>}`` with nothing else, for a kind outside the routed ones."""
    return kind not in known and len(value) == 1


def _source(value: object) -> bool:
    if type(value) is not dict:
        return False
    kind = value.get("kind")
    if type(kind) is not str:
        return False
    if kind == "user":
        return len(value) == 1
    if kind == "plugin":
        return len(value) == 2 and type(value.get("plugin")) is str
    if kind == "agent":
        return len(value) == 2 and type(value.get("agentId")) is str
    return _only_kind(value, kind, _KNOWN_SOURCES)


def _trigger(value: object) -> bool:
    if type(value) is not dict:
        return False
    kind = value.get("kind")
    if type(kind) is not str:
        return False
    if kind == "message" or kind == "injection":
        return len(value) == 2 and _source(value.get("source"))
    if kind == "continuation":
        return len(value) == 1
    return _only_kind(value, kind, _KNOWN_TRIGGERS)


def _error_reason(value: dict[str, Any]) -> bool:
    """``{"kind": "error", "message": str, "code"?: str}``."""
    code = _optional_str(value, "code")
    return code >= 0 and len(value) == 2 + code and type(value.get("message")) is str


def _turn_end_reason(value: object) -> bool:
    if type(value) is not dict:
        return False
    kind = value.get("kind")
    if type(kind) is not str:
        return False
    if kind in _BARE_TURN_ENDS:
        return len(value) == 1
    if kind == "aborted":
        reason = _optional_str(value, "reason")
        return reason >= 0 and len(value) == 1 + reason
    if kind == "error":
        return _error_reason(value)
    return _only_kind(value, kind, _KNOWN_TURN_ENDS)


def _finish_reason(value: object) -> bool:
    if type(value) is not dict:
        return False
    kind = value.get("kind")
    if type(kind) is not str:
        return False
    if kind in _BARE_FINISHES:
        return len(value) == 1
    if kind == "error":
        return _error_reason(value)
    return _only_kind(value, kind, _KNOWN_FINISHES)


def _cache(value: dict[str, Any]) -> int:
    """1 when ``cache`` is ``"ephemeral"``, 0 when absent, -1 for anything else."""
    if "cache" not in value:
        return 0
    return 1 if value["cache"] == "ephemeral" and type(value["cache"]) is str else -1


def _block(value: object, depth: int) -> bool:
    if type(value) is not dict:
        return False
    kind = value.get("type")
    size = len(value)
    if kind == "text":
        cache = _cache(value)
        return cache >= 0 and size == 2 + cache and type(value.get("text")) is str
    if kind == "tool-call":
        return (
            size == 4
            and type(value.get("id")) is str
            and type(value.get("name")) is str
            and type(value.get("arguments")) is str
        )
    if kind == "reasoning":
        return size == 2 and type(value.get("text")) is str
    if kind == "tool-result":
        cache = _cache(value)
        flag = int("isError" in value)
        return (
            cache >= 0
            and size == 3 + cache + flag
            and (not flag or type(value["isError"]) is bool)
            and type(value.get("toolCallId")) is str
            and depth < _MAX_NESTING
            and _blocks(value.get("content"), depth + 1)
        )
    if kind == "image":
        cache = _cache(value)
        mime = _optional_str(value, "mimeType")
        return cache >= 0 and mime >= 0 and size == 2 + cache + mime and type(value.get("url")) is str
    return False


def _blocks(value: object, depth: int = 0) -> bool:
    if type(value) is not list:
        return False
    for item in value:  # noqa: SIM110 - a plain loop: no generator per list on the hot path
        if not _block(item, depth):
            return False
    return True


def _usage(value: object) -> bool:
    if type(value) is not dict:
        return False
    size = 2
    for key in _OPTIONAL_TOKENS:
        if key in value:
            if not _count(value[key]):
                return False
            size += 1
    return len(value) == size and _count(value.get("inputTokens")) and _count(value.get("outputTokens"))


def _chunk(value: object) -> bool:
    if type(value) is not dict:
        return False
    kind = value.get("type")
    size = len(value)
    if kind == "usage":
        return size == 2 and _usage(value.get("usage"))
    if kind == "finish":
        return size == 2 and _finish_reason(value.get("reason"))
    if not _count(value.get("index")):
        return False
    if kind == "text-delta" or kind == "reasoning-delta":
        return size == 3 and type(value.get("text")) is str
    if kind == "block-start":
        return size == 3 and type(value.get("blockType")) is str
    if kind == "tool-call-delta":
        name = _optional_str(value, "name")
        return (
            name >= 0 and size == 4 + name and type(value.get("id")) is str and type(value.get("argumentsDelta")) is str
        )
    if kind == "block-end":
        return size == 3 and _block(value.get("block"), 0)
    return False


def _turn_start(data: dict[str, Any]) -> bool:
    return len(data) == 2 and type(data.get("turn")) is int and _trigger(data.get("trigger"))


def _turn_end(data: dict[str, Any]) -> bool:
    return len(data) == 2 and type(data.get("turn")) is int and _turn_end_reason(data.get("reason"))


def _step(data: dict[str, Any]) -> bool:
    return len(data) == 2 and type(data.get("turn")) is int and type(data.get("step")) is int


def _message(data: dict[str, Any]) -> bool:
    return len(data) == 2 and _blocks(data.get("content")) and _source(data.get("source"))


def _assistant_chunk(data: dict[str, Any]) -> bool:
    return (
        len(data) == 3 and type(data.get("turn")) is int and type(data.get("step")) is int and _chunk(data.get("chunk"))
    )


def _assistant_message(data: dict[str, Any]) -> bool:
    return (
        len(data) == 3
        and type(data.get("turn")) is int
        and type(data.get("step")) is int
        and _blocks(data.get("content"))
    )


def _tool_call(data: dict[str, Any]) -> bool:
    return (
        len(data) == 5
        and type(data.get("turn")) is int
        and type(data.get("step")) is int
        and type(data.get("callId")) is str
        and type(data.get("name")) is str
        and type(data.get("arguments")) is str
    )


def _tool_error(value: object) -> bool:
    return type(value) is dict and len(value) == 2 and type(value.get("name")) is str and type(value.get("code")) is str


def _tool_result(data: dict[str, Any]) -> bool:
    error = "error" in data
    return (
        len(data) == 5 + error
        and type(data.get("turn")) is int
        and type(data.get("step")) is int
        and type(data.get("callId")) is str
        and type(data.get("isError")) is bool
        and (not error or _tool_error(data["error"]))
        and _blocks(data.get("content"))
    )


def _steering(data: dict[str, Any]) -> bool:
    return (
        len(data) == 3
        and type(data.get("turn")) is int
        and _blocks(data.get("content"))
        and _source(data.get("source"))
    )


def _usage_event(data: dict[str, Any]) -> bool:
    return (
        len(data) == 3 and type(data.get("turn")) is int and type(data.get("step")) is int and _usage(data.get("usage"))
    )


def _error_event(data: dict[str, Any]) -> bool:
    code = _optional_str(data, "code")
    return (
        code >= 0
        and len(data) == 3 + code
        and type(data.get("turn")) is int
        and type(data.get("step")) is int
        and type(data.get("message")) is str
    )


_PAYLOADS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "assistant/chunk": _assistant_chunk,
    "assistant/message": _assistant_message,
    "context/message": _message,
    "error": _error_event,
    "step/end": _step,
    "step/start": _step,
    "steering/message": _steering,
    "tool/call": _tool_call,
    "tool/result": _tool_result,
    "turn/end": _turn_end,
    "turn/start": _turn_start,
    "usage": _usage_event,
    "user/message": _message,
}


def _common_shape(value: object) -> bool:
    if type(value) is not dict or len(value) != 4:
        return False
    seq = value.get("seq")
    if type(seq) is not int or seq < 0 or type(value.get("time")) is not int:
        return False
    kind = value.get("type")
    if type(kind) is not str:
        return False
    check = _PAYLOADS.get(kind)
    data = value.get("data")
    return check is not None and type(data) is dict and check(data)


_UNPARSABLE = (ValueError, RecursionError, HarnessError)
"""What decoding or checking one stored event may raise: the event is then a hole."""


def parse_event_lines(lines: Iterable[str | bytes]) -> list[SessionEvent | Exception]:
    """Each line (one event's JSON text without its newline; bytes are UTF-8) as a logged event.

    The result has one item per line: the event (fresh, the caller's), or the exception
    saying why the line is not one (bad UTF-8 or JSON: ``ValueError``; a wrong shape:
    ``HarnessError(code="MALFORMED")`` as :func:`~dsh.core.session.parse_session_event`
    raises it). Never raises for a line's content. Runs under :func:`paused_gc`.
    """
    parsed: list[SessionEvent | Exception] = []
    append = parsed.append
    with paused_gc():
        for line in lines:
            try:
                text = line if isinstance(line, str) else line.decode("utf-8")
                value = loads_stored_json(text)
                append(value if _common_shape(value) else parse_session_event(value, copy=False))
            except _UNPARSABLE as error:
                append(error)
    return parsed


def parse_event_rows(rows: Iterable[tuple[int, str, int, str]]) -> list[SessionEvent | Exception]:
    """Each ``(seq, type, time, data JSON text)`` row as a logged event, like :func:`parse_event_lines`.

    The event is built as ``{"type", "seq", "time", "data"}`` in that key order. Runs
    under :func:`paused_gc`.
    """
    parsed: list[SessionEvent | Exception] = []
    append = parsed.append
    with paused_gc():
        for seq, kind, time, text in rows:
            try:
                value = {"type": kind, "seq": seq, "time": time, "data": loads_stored_json(text)}
                append(value if _common_shape(value) else parse_session_event(value, copy=False))  # type: ignore[arg-type]
            except _UNPARSABLE as error:
                append(error)
    return parsed


# ------------------------------------------------------------------- gc pause
_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = False


def torn_tail(parsed: Sequence[SessionEvent | Exception]) -> tuple[int, bool]:
    """Where a read-back log stops being intact, and whether that damage is committed (SPEC §4.5).

    ``parsed`` is what :func:`parse_event_lines` / :func:`parse_event_rows` returned.
    Returns ``(bad, committed)``: ``bad`` is the index of the first hole (an
    exception) or out-of-sequence event (``len(parsed)`` when there is none), and
    ``committed`` is true when a parseable ``turn/end`` lies at or after it -- damage in
    committed history, which a backend must refuse (``CORRUPT_LOG``); otherwise the
    events from ``bad`` on are a torn tail to drop.
    """
    bad = len(parsed)
    for index, item in enumerate(parsed):
        if isinstance(item, Exception) or item["seq"] != index:
            bad = index
            break
    committed = any(not isinstance(item, Exception) and item["type"] == "turn/end" for item in parsed[bad:])
    return bad, committed


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block; safe to nest and to use from threads.

    Meant for bulk loads whose objects are acyclic and long-lived. The collector is
    disabled when the first pause begins (if it was enabled) and restored when the last
    one ends, so overlapping pauses never leave it off. When the last pause ends, the
    objects created meanwhile join the oldest generation directly (``gc.freeze()`` then
    ``gc.unfreeze()``: no collection pass), instead of being traversed once per
    generation on their way there; reference cycles among them are still collected by
    the next full collection. That step is skipped when something else keeps objects
    frozen (``gc.get_freeze_count()``), so a caller's ``gc.freeze()`` is never undone.
    Reference counting frees acyclic objects throughout.
    """
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0:
                if gc.get_freeze_count() == 0:
                    gc.freeze()
                    gc.unfreeze()
                if _gc_was_enabled:
                    gc.enable()
