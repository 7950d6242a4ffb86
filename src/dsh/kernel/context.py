"""Contexts: the handle a plugin uses to reach the kernel (SPEC §1).

A :class:`Context` belongs to one fiber. Through it a plugin loads children
(:meth:`plugin`), reaches services (``ctx[KEY]`` / :meth:`get`), registers effects
(:meth:`effect`) and listeners (:meth:`on`), dispatches events, and starts tasks
(:meth:`spawn`) that end with the fiber. ``Context()`` makes a root.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

from dsh.kernel.config import KernelError
from dsh.kernel.current import current_context
from dsh.kernel.effects import Effect, EffectBody, collect
from dsh.kernel.events import (
    BailEvent,
    EmitEvent,
    EventDescriptor,
    ParallelEvent,
    SerialEvent,
    WaterfallEvent,
)
from dsh.kernel.fiber import Fiber, FiberState, link_child
from dsh.kernel.logger import Logger
from dsh.kernel.plugin import PluginInfo, PluginSpec, describe
from dsh.kernel.runtime import ListenerEntry, Runtime
from dsh.kernel.service import ServiceHandle, ServiceKey, _as_caller

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class Context:
    """See the module docstring. ``Context()`` with no fiber creates a root."""

    __slots__ = ("_handles", "_lenient", "_logger", "_strict", "fiber", "runtime")

    def __init__(self, fiber: Fiber | None = None, *, _strict: bool = True) -> None:
        if fiber is None:
            runtime = Runtime()
            fiber = Fiber(runtime, None, None, None)
            fiber.ctx = self
        self.fiber = fiber
        self.runtime = fiber.runtime
        self._strict = _strict
        self._lenient: Context | None = None if _strict else self
        self._handles: dict[str, ServiceHandle] = {}
        self._logger: Logger | None = None

    def __repr__(self) -> str:
        return f"<Context of {self.fiber.name}>"

    @property
    def lenient(self) -> Context:
        """This context without the ``inject`` check (what services act through)."""
        if self._lenient is None:
            twin = Context(self.fiber, _strict=False)
            twin._handles = self._handles
            self._lenient = twin
        return self._lenient

    @property
    def logger(self) -> Logger:
        if self._logger is None:
            self._logger = Logger(self.fiber.name if self.fiber.info is not None else "")
        return self._logger

    # ------------------------------------------------------------------ plugins
    def plugin(self, plugin: object, config: object = None) -> Fiber:
        """Load ``plugin`` as a child fiber; await the result to wait for its start.

        The plugin's ``apply`` runs on a later tick. Awaiting raises if its config
        is invalid or ``apply`` raised; it resolves at once if an ``inject``ed
        service is missing (the fiber then starts when the service appears).
        """
        info = describe(plugin)
        return self._load(info, config)

    def _load(self, info: PluginInfo, config: object) -> Fiber:
        child = Fiber(self.runtime, self.fiber, info, config)
        child.ctx = Context(child)
        child._ready_future()  # needs a running loop: fail before anything is registered
        link_child(self.fiber, child)
        self.runtime.track(child)
        child._schedule_boot()
        return child

    def inject(self, names: Sequence[str | ServiceKey[Any]], callback: Callable[[Context], Any]) -> Fiber:
        """Run ``callback(child_ctx)`` in a child fiber once every named service exists."""
        spec = PluginSpec(name=f"{self.fiber.name}/inject", apply=lambda ctx, _config: callback(ctx), inject=names)
        return self.plugin(spec)

    # ----------------------------------------------------------------- services
    def get(self, key: ServiceKey[T]) -> T | None:
        """The service under ``key`` as seen by this context, or None if absent."""
        name = key.name
        service = self.runtime.lookup(name)
        if service is None:
            return None
        handle = self._handles.get(name)
        if handle is None or handle._service is not service:
            handle = ServiceHandle(service, self)
            self._handles[name] = handle
        return handle  # type: ignore[return-value]

    def __getitem__(self, key: ServiceKey[T]) -> T:
        """Like :meth:`get` but raises when the service is missing or undeclared."""
        name = key.name
        info = self.fiber.info
        if self._strict and info is not None and name not in info.inject and not self._provides(name):
            raise KernelError(
                f'plugin "{info.name}" uses service "{name}" without declaring it: add "{name}" to its inject list'
            )
        service = self.get(key)
        if service is None:
            raise KernelError(f'service "{name}" is not available (load a plugin that provides it)')
        return service

    def _provides(self, name: str) -> bool:
        provision = self.runtime.services.get(name)
        return provision is not None and provision.fiber is self.fiber

    def _provide(self, name: str, service: object) -> None:
        runtime = self.runtime
        fiber = self.fiber

        def body() -> Callable[[], None]:
            runtime.provide(name, service, fiber)
            if fiber.state is FiberState.ACTIVE:  # a live provider: dependents may start now
                runtime.reconcile()

            def withdraw() -> None:
                runtime.withdraw(name)
                if fiber.state is FiberState.ACTIVE:  # withdrawn while the provider lives on
                    runtime.reconcile()

            return withdraw

        self._effect_on(fiber, body, f"service {name}")

    # ------------------------------------------------------------------ effects
    def effect(self, body: EffectBody, label: str = "") -> Effect:
        """Run ``body`` now and own its cleanup on this context's fiber (SPEC §1.3).

        Raises :class:`KernelError` if the fiber is no longer alive, and whatever
        ``body`` raised (after rolling back the disposers a generator yielded).
        """
        return self._effect_on(self.fiber, body, label)

    @staticmethod
    def _effect_on(fiber: Fiber, body: EffectBody, label: str) -> Effect:
        if not fiber.alive:
            raise KernelError("cannot create effect on inactive context")
        effect = Effect(fiber, label, collect(body, label, fiber))
        fiber._add_effect(effect)
        return effect

    def spawn(self, coro: Coroutine[Any, Any, T], name: str | None = None) -> asyncio.Task[T]:
        """Run ``coro`` as a task owned by this context's fiber, on behalf of this context.

        The task is cancelled and awaited when the fiber is disposed or unloaded;
        its failure is logged. Raises :class:`KernelError` once the fiber is disposed.
        """
        token = current_context.set(self)
        try:
            return self.fiber.spawn(coro, name)
        finally:
            current_context.reset(token)

    # ------------------------------------------------------------------- events
    def on(self, event: EventDescriptor, listener: Callable[..., Any], prepend: bool = False) -> Effect:
        """Listen to ``event``; the listener is owned by this context's fiber.

        ``prepend=True`` puts it before the listeners already there. Returns the
        listener's :class:`Effect` (call it to stop listening).
        """
        runtime = self.runtime
        name = event.name
        entry = ListenerEntry(listener, self, inspect.iscoroutinefunction(listener))

        def body() -> Callable[[], None]:
            runtime.add_listener(name, entry, prepend)
            return lambda: runtime.remove_listener(name, entry)

        return self.effect(body, f"listener {name}")

    def listener_count(self, event: EventDescriptor) -> int:
        """How many listeners ``event`` has now."""
        return len(self.runtime.listeners.get(event.name, ()))

    def emit(self, event: EmitEvent[P], *args: P.args, **kwargs: P.kwargs) -> None:
        """Call every listener now; the first exception propagates (later ones skipped).

        A coroutine returned by a listener runs as a task of the listener's fiber.
        """
        entries = self.runtime.listeners.get(event.name)
        if entries is None:
            return
        enter = current_context.set
        leave = current_context.reset
        for listener, owner, _ in entries:
            token = enter(owner)
            try:
                result = listener(*args, **kwargs)
                if result is not None and isinstance(result, Coroutine):
                    owner.fiber.spawn(result, event.name)
            finally:
                leave(token)

    async def parallel(self, event: ParallelEvent[P], *args: P.args, **kwargs: P.kwargs) -> None:
        """Start every listener, await them all, raise the first failure.

        A listener that raises synchronously stops later ones from starting. A
        listener task cancelled because its plugin went away counts as done.
        Cancelling the dispatcher leaves started listeners to their fibers.
        """
        entries = self.runtime.listeners.get(event.name)
        if entries is None:
            return
        pending: list[asyncio.Future[Any]] = []
        for listener, owner, _ in entries:
            token = current_context.set(owner)
            try:
                result = listener(*args, **kwargs)
                if isinstance(result, Coroutine):
                    pending.append(owner.fiber._spawn(result, event.name, report=False))
                elif inspect.isawaitable(result):
                    pending.append(asyncio.ensure_future(result))
            finally:
                current_context.reset(token)
        if pending:
            await _all(pending)

    async def serial(self, event: SerialEvent[P], *args: P.args, **kwargs: P.kwargs) -> Any:
        """Await listeners in order; return the first value that is not None/False."""
        for listener, owner, _ in self.runtime.listeners.get(event.name, ()):
            token = current_context.set(owner)
            try:
                result = listener(*args, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
            finally:
                current_context.reset(token)
            if result is not None and result is not False:
                return result
        return None

    def bail(self, event: BailEvent[P], *args: P.args, **kwargs: P.kwargs) -> Any:
        """Call listeners in order; return the first value that is not None/False."""
        for listener, owner, _ in self.runtime.listeners.get(event.name, ()):
            token = current_context.set(owner)
            try:
                result = listener(*args, **kwargs)
            finally:
                current_context.reset(token)
            if result is not None and result is not False:
                return result
        return None

    def waterfall(self, event: WaterfallEvent[P, R], *args: Any, inner: Callable[[], R]) -> R:
        """Run the around-middleware chain ending in ``inner`` and return its value.

        Each listener gets ``(*args, next)``; ``next()`` takes no arguments and
        returns what the next listener (finally ``inner()``) returns. The body of
        an ``async def`` listener runs on behalf of its own context when awaited.
        """
        entries = self.runtime.listeners.get(event.name)
        if entries is None:
            return inner()
        count = len(entries)

        def step(index: int) -> Any:
            if index == count:
                return inner()
            listener, owner, is_async = entries[index]
            token = current_context.set(owner)
            try:
                result = listener(*args, lambda: step(index + 1))
            finally:
                current_context.reset(token)
            if is_async:
                return _as_caller(result, owner)
            return result

        return step(0)  # type: ignore[no-any-return]

    # ---------------------------------------------------------------- teardown
    async def dispose(self) -> None:
        """Dispose this context's fiber (for the root: everything)."""
        await self.fiber.dispose()


def key(name: str) -> ServiceKey[Any]:
    """An untyped service key (for ad-hoc services in tests and examples)."""
    return ServiceKey(name)


async def _all(pending: list[asyncio.Future[Any]]) -> None:
    """Wait for every future; raise the first failure (in listener order) as soon as one fails."""
    for future in pending:
        future.add_done_callback(_retrieve)  # later failures are dropped, as Promise.all drops them
    done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
    for future in pending:
        if future in done and not future.cancelled():
            error = future.exception()
            if error is not None:
                raise error


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
