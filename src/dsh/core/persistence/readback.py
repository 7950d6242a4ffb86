"""Reading stored events back in bulk: one validated decode per event.

Loading a long log decodes every stored event, so this path is tuned for volume:

* :func:`parse_event_lines` decodes JSONL lines with
  :func:`~dsh.core.session.parse_session_event_line`, which checks each event against
  its class in the same pass (SPEC §3.1); :func:`parse_event_rows` gives the same
  events for SQLite rows, decoding each row's ``data`` into its payload class;
* :func:`loads_stored_json` decodes JSON text the vocabulary's decoder refuses only
  because it holds a lone surrogate escape (``"\\ud800"``, which a reference writer
  may write): like ``json.loads``, but refusing ``NaN``, ``Infinity`` and numbers
  beyond float range, as the vocabulary's decoder does;
* :func:`paused_gc` pauses the cyclic garbage collector around a bulk decode (both bulk
  functions use it), which allocates many long-lived objects and would otherwise
  trigger repeated collections over the growing heap;
* :func:`torn_tail` says where a read-back log stops being intact.

A line or row that is no event becomes the exception saying why, in its place, so a
backend can tell a torn tail from committed damage.
"""

from __future__ import annotations

import gc
import json
import math
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache, partial
from operator import attrgetter
from typing import Any, TypeAlias

import msgspec

from dsh.core.errors import HarnessError
from dsh.core.llm import encode
from dsh.core.session import (
    SessionEvent,
    SessionEventBase,
    TurnEndEvent,
    UntypedEvent,
    event_class,
    parse_session_event,
    parse_session_event_line,
    payload_type,
)


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
    ``RecursionError`` when it nests deeper than the interpreter allows. Unlike the
    vocabulary's decoder it accepts lone surrogate escapes.
    """
    try:
        value, end = _raw_decode(text)
        if end == len(text):
            return value
    except ValueError:
        pass
    return _DECODER.decode(text)  # whitespace around the value, or the exact error


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
"""A ``\\uD800``-``\\uDFFF`` escape: the one JSON the vocabulary's decoder may refuse for its text alone."""

_UNPARSABLE = (ValueError, RecursionError, HarnessError)
"""What decoding one stored event may raise: the event is then a hole."""


def _escapes_a_surrogate(line: str | bytes) -> bool:
    if isinstance(line, str):
        return _SURROGATE_ESCAPE.search(line) is not None
    return _SURROGATE_ESCAPE_BYTES.search(line) is not None


def _retry(line: str | bytes, error: HarnessError) -> SessionEvent | Exception:
    """The event of a ``line`` the decoder refused when a surrogate escape is why, else the reason it is none."""
    if not _escapes_a_surrogate(line):
        return error
    try:
        text = line if isinstance(line, str) else line.decode("utf-8")
        return parse_session_event(loads_stored_json(text))
    except _UNPARSABLE as final:
        return final


def parse_event_lines(lines: Iterable[str | bytes]) -> list[SessionEvent | Exception]:
    """Each line (one event's JSON text without its newline; bytes are UTF-8) as a logged event.

    The result has one item per line: the event, or the exception saying why the line
    is not one: ``HarnessError(code="MALFORMED")`` as
    :func:`~dsh.core.session.parse_session_event_line` raises it (bad UTF-8 or JSON,
    a wrong shape), ``RecursionError`` for nesting too deep to decode, and, for a
    line holding a lone surrogate escape, the verdict of :func:`loads_stored_json` and
    :func:`~dsh.core.session.parse_session_event`. Never raises for a line's content.
    Runs under :func:`paused_gc`.
    """
    parsed: list[SessionEvent | Exception] = []
    append = parsed.append
    parse = parse_session_event_line
    with paused_gc():
        for line in lines:
            try:
                append(parse(line))
            except HarnessError as error:
                append(_retry(line, error))
            except RecursionError as error:
                append(error)
    return parsed


def _row_line(seq: int, kind: str, time: int, data: str) -> str:
    """The JSONL line of a row: ``{"type","seq","time","data"}`` in that key order."""
    return f'{{"type":{encode(kind).decode()},"seq":{seq},"time":{time},"data":{data}}}'


@cache
def _payload_decoder(cls: type[SessionEventBase]) -> Callable[[str], Any]:
    return msgspec.json.Decoder(payload_type(cls)).decode


_Reader: TypeAlias = tuple[Callable[..., SessionEvent], Callable[[str], Any]] | None


def _reader(kind: str) -> _Reader:
    """``(make event, decode data)`` for rows of event type ``kind``; None: join the row's line instead."""
    if type(kind) is not str:
        return None
    cls = event_class(kind)
    if cls is None:
        return partial(UntypedEvent, kind), msgspec.json.decode
    return cls, _payload_decoder(cls)


_ROW_REFUSALS = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)
"""What decoding a row's ``data`` directly may raise: its line then gives the exact verdict."""


def parse_event_rows(rows: Iterable[tuple[int, str, int, str]]) -> list[SessionEvent | Exception]:
    """Each ``(seq, type, time, data JSON text)`` row as a logged event, like :func:`parse_event_lines`.

    The result is exactly what decoding the row's JSONL line gives (the columns joined
    in the key order ``type, seq, time, data``). A row whose ``seq`` and ``time`` are
    non-negative ints has only its ``data`` decoded, into the payload class of its
    type: the same value, without building the line. Any other row, or one whose
    ``data`` that decode refuses, takes the line path and its verdict. Runs under
    :func:`paused_gc`.
    """
    readers: dict[str, _Reader] = {}
    parsed: list[SessionEvent | Exception] = []
    append = parsed.append
    with paused_gc():
        for seq, kind, time, data in rows:
            try:
                reader = readers[kind]
            except KeyError:
                reader = readers[kind] = _reader(kind)
            if reader is not None and type(seq) is int and type(time) is int and seq >= 0 and time >= 0:
                make, decode = reader
                try:
                    append(make(seq=seq, time=time, data=decode(data)))
                    continue
                except _ROW_REFUSALS:
                    pass
            append(parse_event_lines([_row_line(seq, kind, time, data)])[0])
    return parsed


_seq_of = attrgetter("seq")

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
    intact = not any(issubclass(kind, Exception) for kind in set(map(type, parsed)))
    if intact and list(map(_seq_of, parsed)) == list(range(len(parsed))):  # the common case, at C speed
        return len(parsed), False
    # a hole or a seq out of place exists, so this finds one
    bad = next(index for index, item in enumerate(parsed) if isinstance(item, Exception) or item.seq != index)
    committed = any(type(item) is TurnEndEvent for item in parsed[bad:])
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
