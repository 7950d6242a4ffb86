"""JSON values: the only data a session log may hold (SPEC §3.2).

A JSON value is ``None``, a ``bool``, an ``int``, a finite ``float``, a ``str``, a
``list`` of JSON values, or a ``dict`` with ``str`` keys and JSON values. Subclasses of
``dict``/``list`` are accepted, and so are subclasses of ``str``/``int``/``float`` such
as enum members (``json.dumps`` writes them as their plain value). Everything else is
rejected: tuples, sets, bytes, non-``str`` keys, NaN and infinities, custom objects,
and cycles. The same object reachable twice without a cycle is fine.

:func:`check_json` gives the verdict without copying: a lean walk first (it looks
only into non-scalar items), and for anything unusual (a subclass of a scalar, a
non-``str`` key, a non-JSON value, a cycle) a careful walk that names the offender.
It guards the data of untyped session events (the typed vocabulary is checked by its
decoder). :func:`dumps_json` is the one serializer for plain JSON on disk and wire
(compact, UTF-8 as-is, no NaN); it reuses one C encoder and may be called from any
thread.
"""

from __future__ import annotations

import json
import math
from _json import make_encoder
from json.encoder import encode_basestring
from typing import Any, TypeAlias

from dsh.core.errors import HarnessError

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
"""A JSON value as Python holds it (see the module docstring)."""


_isfinite = math.isfinite


class NotJsonError(HarnessError, ValueError):
    """A value that is not JSON (code ``NOT_JSON``).

    ``path`` locates the first offender from the root (``$``, ``$.data.content[0]``);
    ``reason`` says what is wrong with it.
    """

    def __init__(self, message: str, *, reason: str = "", path: str = "$", cause: object = None) -> None:
        super().__init__(message, "NOT_JSON", cause)
        self.reason = reason or message
        self.path = path


class _Offender(Exception):  # noqa: N818 - internal signal, never escapes
    """Internal: raised at the offender, collects the path while unwinding."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.segments: list[str | int] = []


def _describe(value: object) -> str:
    kind = type(value)
    if kind is float:
        return f"non-finite number {value!r}"
    if isinstance(value, tuple | set | frozenset | bytes | bytearray):
        return f"a {kind.__name__} (use a list or a str instead)"
    name = f"{kind.__module__}.{kind.__qualname__}"
    return f"a {name} object (only None, bool, int, float, str, list, dict are JSON)"


def _check_scalar(value: object) -> None:
    """Accept a subclass of str/int/float (a finite one), or reject ``value``."""
    if isinstance(value, str | int):
        return
    if isinstance(value, float):
        plain = float.__float__(value)
        if _isfinite(plain):
            return
        raise _Offender(f"non-finite number {plain!r}")
    raise _Offender(_describe(value))


def _check(value: object, active: set[int]) -> None:
    """Check a value that is not an exact str/int/bool/None (callers inline those), naming the offender."""
    kind = type(value)
    if kind is float:
        if _isfinite(value):  # type: ignore[arg-type]
            return
        raise _Offender(_describe(value))
    if isinstance(value, dict):
        _check_dict(value, active)
    elif isinstance(value, list):
        _check_list(value, active)
    else:
        _check_scalar(value)


def _check_dict(value: dict[Any, Any], active: set[int]) -> None:
    marker = id(value)
    if marker in active:
        raise _Offender("a cycle (this dict contains itself)")
    active.add(marker)
    for key, item in value.items():
        if not isinstance(key, str):
            raise _Offender(f"a non-string key {key!r} (JSON object keys are strings)")
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        try:
            _check(item, active)
        except _Offender as offense:
            offense.segments.append(key)
            raise
    active.discard(marker)


def _check_list(value: list[Any], active: set[int]) -> None:
    marker = id(value)
    if marker in active:
        raise _Offender("a cycle (this list contains itself)")
    active.add(marker)
    for index, item in enumerate(value):
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        try:
            _check(item, active)
        except _Offender as offense:
            offense.segments.append(index)
            raise
    active.discard(marker)


class _Unusual(Exception):  # noqa: N818 - internal signal, never escapes
    """Internal: the lean walk met something only the careful walk handles."""


def _lean_check(value: object) -> None:
    """Check a value that is not an exact str/int/bool/None (callers inline those)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if type(key) is not str:
                raise _Unusual
            kind = type(item)
            if kind is not str and kind is not int and kind is not bool and item is not None:
                _lean_check(item)
    elif isinstance(value, list):
        for item in value:
            kind = type(item)
            if kind is not str and kind is not int and kind is not bool and item is not None:
                _lean_check(item)
    elif type(value) is not float or not _isfinite(value):
        raise _Unusual


def _format_path(segments: list[str | int]) -> str:
    parts = ["$"]
    for segment in reversed(segments):
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif segment.isidentifier():
            parts.append(f".{segment}")
        else:
            parts.append(f"[{json.dumps(segment, ensure_ascii=False)}]")
    return "".join(parts)


def check_json(value: object) -> None:
    """Raise :class:`NotJsonError` naming the first offender and its path unless ``value`` is JSON.

    Nothing is copied or converted (subclasses stay subclasses). Nesting deeper than
    the interpreter's recursion limit is rejected the same way.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return
    try:
        _lean_check(value)
    except (_Unusual, RecursionError):
        _careful_check(value)  # a cycle recurses until RecursionError; the careful walk tells it from deep nesting


def _careful_check(value: object) -> None:
    try:
        _check(value, set())
    except _Offender as offense:
        path = _format_path(offense.segments)
        raise NotJsonError(f"not a JSON value at {path}: {offense.reason}", reason=offense.reason, path=path) from None
    except RecursionError:
        reason = "nesting too deep to serialize"
        raise NotJsonError(f"not a JSON value: {reason}", reason=reason) from None


def is_json_value(value: object) -> bool:
    """True when ``value`` is a JSON value (see the module docstring); never raises."""
    try:
        check_json(value)
    except NotJsonError:
        return False
    return True


def _not_serializable(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# No markers dict (no cycle bookkeeping): the C encoder then keeps no state between
# calls, so one instance serves every call and every thread.
_encode = make_encoder(None, _not_serializable, encode_basestring, None, ":", ",", False, False, False)


def dumps_json(value: object) -> str:
    """Serialize like ``JSON.stringify``: compact, non-ASCII as-is, keys in insertion order.

    Raises ``ValueError`` for NaN/infinity, ``TypeError`` for non-JSON types and
    ``RecursionError`` for a cycle; check data with :func:`check_json` first when it
    comes from outside. Thread-safe.
    """
    return "".join(_encode(value, 0))
