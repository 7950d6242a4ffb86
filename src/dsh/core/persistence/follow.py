"""Following a stored session while another process (or this one) writes it: the live tail.

:func:`poll_log` is the polling follower every :class:`~dsh.core.persistence.CoordinatedPersistence`
gets as its ``follow``; a backend with change notifications (PostgreSQL's ``LISTEN/NOTIFY``)
replaces the waiting but keeps the guarantees, which are those of
:meth:`~dsh.core.persistence.SessionPersistence.follow`:

* **no gap, no duplicate, seq order**: the events yielded are ``after_seq + 1, after_seq + 2, ...``,
  each once: a read is cut to the events that continue the last one yielded;
* **only what is stored**: an event is yielded once the backend stores it where another
  process reads it (a committed transaction for SQLite and PostgreSQL, a complete line for
  JSONL); a torn tail is never yielded, and nothing is repaired or locked by following;
* **ends** when the session is deleted; otherwise it runs until the caller stops iterating
  (``aclose()``, or the task is cancelled).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence

from dsh.core.persistence.backend import PersistenceBackend
from dsh.core.persistence.errors import PersistenceError
from dsh.core.session import SessionEvent

POLL_INTERVAL_S = 0.1
"""How often the polling follower looks for new events."""


def continuing(events: Sequence[SessionEvent], after_seq: int) -> list[SessionEvent]:
    """The events of ``events`` that continue ``after_seq`` without a gap (a read may repeat or skip nothing)."""
    run: list[SessionEvent] = []
    expected = after_seq + 1
    for event in events:
        if event.seq < expected:
            continue
        if event.seq != expected:
            break
        run.append(event)
        expected += 1
    return run


def not_stored(id: str) -> PersistenceError:
    """The error of following a session nothing stores."""
    return PersistenceError(f'session "{id}" not found: nothing is stored for it yet', "SESSION_NOT_FOUND")


async def poll_log(
    backend: PersistenceBackend, id: str, after_seq: int = -1, interval_s: float = POLL_INTERVAL_S
) -> AsyncGenerator[SessionEvent, None]:
    """Yield the events of ``id`` after ``after_seq`` as they are stored, polling every ``interval_s``.

    Raises ``SESSION_NOT_FOUND`` when nothing is stored for ``id`` at the start; see the
    module docstring for the rest.
    """
    last = after_seq
    seen: object = None
    first = True
    while True:
        mark = await backend.change_mark(id)
        if first or mark is None or mark != seen:
            seen = mark
            events = await backend.read_after(id, last)
            if events is None:
                if first:
                    raise not_stored(id)
                return
            for event in continuing(events, last):
                last = event.seq
                yield event
            first = False
        await asyncio.sleep(interval_s)
