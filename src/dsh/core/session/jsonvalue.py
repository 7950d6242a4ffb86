"""JSON values: the only data a session log may hold (SPEC §3.2).

A JSON value is ``None``, a ``bool``, an ``int``, a finite ``float``, a ``str``, a
``list`` of JSON values, or a ``dict`` with ``str`` keys and JSON values. Subclasses of
``dict``/``list`` are accepted (the invariants plugin freezes logged data into
immutable subclasses), and so are subclasses of ``str``/``int``/``float`` such as enum
members (``json.dumps`` writes them as their plain value). Everything else is
rejected: tuples, sets, bytes, non-``str`` keys, NaN and infinities, custom objects,
and cycles. The same object reachable twice without a cycle is fine.

:func:`json_snapshot` validates and deep-copies in one pass; it runs for every logged
event (once per streamed chunk). It first tries a lean walk that copies each container
at C speed and only looks into non-scalar items; anything unusual (a subclass of a
scalar, a non-``str`` key, a non-JSON value, a cycle) falls back to a careful walk that
converts subclasses and names the offender. Its copies are always plain
``dict``/``list``/scalars, sharing no container with the input. :func:`check_json` is
the same verdict without the copy, for values the caller already owns.
:func:`dumps_json` is the one serializer for disk and wire (compact, UTF-8 as-is, no
NaN); it reuses one C encoder and may be called from any thread.
"""

from __future__ import annotations

import json
import math
from _json import make_encoder
from json.encoder import encode_basestring
from typing import Any, TypeAlias, TypeVar

from dsh.core.errors import HarnessError

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
"""A JSON value as Python holds it (see the module docstring)."""

T = TypeVar("T")

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


def _scalar(value: object) -> object:
    """Copy a subclass of str/int/float as its plain value, or reject ``value``."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        plain = float.__float__(value)
        if _isfinite(plain):
            return plain
        raise _Offender(f"non-finite number {plain!r}")
    raise _Offender(_describe(value))


def _copy(value: object, active: set[int]) -> Any:
    """Copy a value that is not an exact str/int/bool/None (callers inline those)."""
    kind = type(value)
    if kind is float:
        if _isfinite(value):  # type: ignore[arg-type]
            return value
        raise _Offender(_describe(value))
    if kind is dict or (kind is not list and isinstance(value, dict)):
        return _copy_dict(value, active)  # type: ignore[arg-type]
    if isinstance(value, list):
        return _copy_list(value, active)
    return _scalar(value)


def _copy_dict(value: dict[Any, Any], active: set[int]) -> dict[str, Any]:
    marker = id(value)
    if marker in active:
        raise _Offender("a cycle (this dict contains itself)")
    active.add(marker)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if type(key) is not str:
            if not isinstance(key, str):
                raise _Offender(f"a non-string key {key!r} (JSON object keys are strings)")
            key = str.__str__(key)
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            out[key] = item
            continue
        try:
            out[key] = _copy(item, active)
        except _Offender as offense:
            offense.segments.append(key)
            raise
    active.discard(marker)
    return out


def _copy_list(value: list[Any], active: set[int]) -> list[Any]:
    marker = id(value)
    if marker in active:
        raise _Offender("a cycle (this list contains itself)")
    active.add(marker)
    out: list[Any] = []
    append = out.append
    for index, item in enumerate(value):
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            append(item)
            continue
        try:
            append(_copy(item, active))
        except _Offender as offense:
            offense.segments.append(index)
            raise
    active.discard(marker)
    return out


class _Unusual(Exception):  # noqa: N818 - internal signal, never escapes
    """Internal: the lean walk met something only the careful walk handles."""


def _lean_dict(value: dict[Any, Any]) -> dict[str, Any]:
    out = dict(value)  # the C-level copy; only non-scalar items are revisited below
    for key, item in out.items():
        if type(key) is not str:
            raise _Unusual
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is dict:
            out[key] = _lean_dict(item)  # replacing a value keeps the dict's size: iteration stays valid
        elif kind is list:
            out[key] = _lean_list(item)
        elif kind is not float or not _isfinite(item):
            out[key] = _lean_subclass(item)
    return out


def _lean_list(value: list[Any]) -> list[Any]:
    out = list(value)
    for index, item in enumerate(out):
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is dict:
            out[index] = _lean_dict(item)
        elif kind is list:
            out[index] = _lean_list(item)
        elif kind is not float or not _isfinite(item):
            out[index] = _lean_subclass(item)
    return out


def _lean_subclass(value: object) -> Any:
    """A dict or list subclass (such as a frozen container) copied plain; anything else is unusual."""
    if isinstance(value, dict):
        return _lean_dict(value)
    if isinstance(value, list):
        return _lean_list(value)
    raise _Unusual


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


def json_snapshot(value: T) -> T:
    """Validate ``value`` as JSON and return a deep, plain copy of it.

    The copy shares no container with ``value`` (``dict``/``list`` subclasses come
    back as plain ``dict``/``list``), so later mutation on either side is invisible to
    the other. Raises :class:`NotJsonError` naming the first offender and its path.
    Nesting deeper than the interpreter's recursion limit is rejected the same way.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    try:
        if kind is dict:
            return _lean_dict(value)  # type: ignore[arg-type, return-value]
        if kind is list:
            return _lean_list(value)  # type: ignore[arg-type, return-value]
        return _lean_subclass(value)  # type: ignore[no-any-return]  # frozen logged content, say
    except (_Unusual, RecursionError):
        pass  # a cycle recurses until RecursionError; the careful walk tells it from deep nesting
    return _careful_snapshot(value)


def check_json(value: object) -> None:
    """Raise :class:`NotJsonError` exactly when :func:`json_snapshot` would; copy nothing.

    For values the caller already owns (say, fresh from ``json.loads``) and keeps as
    they are: subclasses stay subclasses, nothing is converted.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return
    try:
        _lean_check(value)
    except (_Unusual, RecursionError):
        _careful_snapshot(value)


def _careful_snapshot(value: T) -> T:
    try:
        return _copy(value, set())  # type: ignore[no-any-return]
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
    ``RecursionError`` for a cycle; pass data through :func:`json_snapshot` first when
    it comes from outside. Thread-safe.
    """
    return "".join(_encode(value, 0))
