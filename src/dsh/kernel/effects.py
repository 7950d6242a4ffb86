"""Effects: registrations that undo themselves (SPEC §1.3).

``ctx.effect(body)`` runs ``body()`` at once and keeps what it returns as cleanup on
the caller's fiber. ``body`` may return

* ``None`` (nothing to undo),
* a disposer (a callable, sync or returning an awaitable), or
* a generator that yields disposers one by one. If the generator raises after
  yielding some, those are run at once in reverse order (rollback) and the
  exception propagates to the caller of ``ctx.effect``.

The returned :class:`Effect` is itself the disposer: calling it runs the collected
disposers last-first, one after another, and is idempotent. When a disposer returns
an awaitable the rest run after it settles, and the call returns an awaitable for
the whole; otherwise it returns None.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, TypeAlias, cast

if TYPE_CHECKING:
    from dsh.kernel.fiber import Fiber

Disposer: TypeAlias = Callable[[], Any]
EffectBody: TypeAlias = Callable[[], "Disposer | Generator[Disposer, None, None] | None"]

_log = logging.getLogger("dsh.kernel")


def _report(label: str, error: BaseException) -> None:
    _log.error("disposer of %s raised: %r", label or "an effect", error, exc_info=error)


async def _finish(pending: Awaitable[Any], rest: list[Disposer], label: str) -> None:
    try:
        await pending
    except Exception as error:
        _report(label, error)
    remaining = run_disposers(rest, label)
    if remaining is not None:
        await remaining


def run_disposers(disposers: list[Disposer], label: str) -> Coroutine[Any, Any, None] | None:
    """Run ``disposers`` last-first, sequentially; failures are logged, never raised.

    ``disposers`` is consumed. Returns an awaitable when some disposer was async.
    """
    while disposers:
        disposer = disposers.pop()
        try:
            result = disposer()
        except Exception as error:
            _report(label, error)
            continue
        if inspect.isawaitable(result):
            return _finish(result, disposers, label)
    return None


class Effect:
    """A registered effect: call it to undo. Owned by one fiber until disposed."""

    __slots__ = ("_disposers", "_done", "fiber", "label")

    def __init__(self, fiber: Fiber, label: str, disposers: list[Disposer]) -> None:
        self.fiber = fiber
        self.label = label
        self._disposers = disposers
        self._done = False

    @property
    def disposed(self) -> bool:
        return self._done

    def detach(self) -> None:
        """Mark the effect undone without running its disposers (its target went away itself)."""
        self._done = True
        self.fiber._forget_effect(self)

    def __call__(self) -> Awaitable[None] | None:
        if self._done:
            return None
        self._done = True
        self.fiber._forget_effect(self)
        pending = run_disposers(self._disposers, self.label)
        if pending is None:
            return None
        return asyncio.ensure_future(pending)


def collect(body: EffectBody, label: str, fiber: Fiber) -> list[Disposer]:
    """Run an effect body and collect its disposers, rolling back on a raise.

    Async rollback disposers finish in the background; ``fiber``'s disposal waits
    for them. The body's exception propagates either way.
    """
    result: object = body()
    if result is None:
        return []
    if inspect.isgenerator(result):
        collected: list[Disposer] = []
        try:
            for disposer in cast("Generator[Disposer, None, None]", result):
                collected.append(disposer)
        except BaseException:
            pending = run_disposers(collected, label)
            if pending is not None:
                fiber._settle(pending, f"rollback {label}")
            raise
        return collected
    if inspect.iscoroutine(result):
        result.close()
        raise TypeError(
            f"effect {label or body!r} returned a coroutine; an effect body must be synchronous "
            "(start async work with ctx.spawn and return its disposer)"
        )
    if callable(result):
        return [result]
    raise TypeError(f"effect {label or body!r} returned {result!r}; expected a disposer, a generator or None")
