"""Event descriptors and their dispatch modes (SPEC §1.4).

Each event is declared once, in its domain's catalog module, as a typed
descriptor whose class is its dispatch mode::

    SESSION_EVENT: EmitEvent[[Session, SessionEvent]] = EmitEvent("session/event")

Modes:

``emit``
    Synchronous. Listeners run in order; the first exception propagates to the
    emitter and later listeners are skipped. A coroutine returned by a listener
    runs as a task owned by the listener's fiber; its failure is logged.
``parallel``
    Awaitable. Starts every listener, then awaits them all; the first failure is
    raised (a synchronous raise stops later listeners from starting).
``serial`` / ``bail``
    Run listeners in order until one returns a value other than None/False
    (awaiting each for ``serial``) and return that value.
``waterfall``
    Around-middleware. Each listener receives ``(*args, next)``; ``next()`` calls
    the next listener, finally ``inner()``, and returns its value. A listener that
    returns without calling ``next()`` short-circuits. Composition is synchronous:
    ``next()`` returns whatever the next function returns (often an awaitable).

Every dispatch works on a snapshot of the listener list taken when it starts.
"""

from __future__ import annotations

from typing import Any, Generic, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class EventDescriptor:
    """Base of the typed descriptors; ``name`` is ``domain/verb``."""

    mode: str = ""

    __slots__ = ("doc", "name")

    def __init__(self, name: str, doc: str = "") -> None:
        self.name = name
        self.doc = doc

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class EmitEvent(EventDescriptor, Generic[P]):
    """A synchronous notification; listener exceptions reach the emitter."""

    mode = "emit"


class ParallelEvent(EventDescriptor, Generic[P]):
    """An awaited fan-out; the first failure is raised to the dispatcher."""

    mode = "parallel"


class SerialEvent(EventDescriptor, Generic[P]):
    """Awaited listeners in order until one bails with a value."""

    mode = "serial"


class BailEvent(EventDescriptor, Generic[P]):
    """Synchronous listeners in order until one bails with a value."""

    mode = "bail"


class WaterfallEvent(EventDescriptor, Generic[P, R]):
    """Around-middleware: listeners get ``(*args, next)`` and return ``R``."""

    mode = "waterfall"


AnyEvent = EventDescriptor
Listener = Any
