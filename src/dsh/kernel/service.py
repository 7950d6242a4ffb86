"""Services under typed keys, and the caller-bound handles that reach them (SPEC §1.2).

``LLM: ServiceKey[LlmService] = ServiceKey("llm")`` names a service; ``ctx[LLM]``
returns a *handle*: the service seen on behalf of ``ctx``. Calling a method through
it runs with ``ctx`` as the current caller, so effects and listeners the service
registers are owned by ``ctx``'s fiber. That holds for the body of an ``async def``
method (while awaited) and of an async generator method (at every step) too.
Inside a service, :attr:`Service.ctx` is that caller's context (or the service's own
when nobody called through a handle).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from types import AsyncGeneratorType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from dsh.kernel.current import current_context

if TYPE_CHECKING:
    from dsh.kernel.context import Context

T = TypeVar("T")


class ServiceKey(Generic[T]):
    """The typed name of a service; YAML and ``inject`` lists use ``name``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ServiceKey) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("ServiceKey", self.name))


def key_name(key: ServiceKey[Any] | str) -> str:
    return key if isinstance(key, str) else key.name


class Service:
    """Base of every service: constructing one provides it under ``key``.

    The registration is an effect of the constructing fiber, so the service
    disappears when that fiber is disposed. The service is visible to
    ``ctx.get`` only while its fiber is ACTIVE.
    """

    def __init__(self, ctx: Context, key: ServiceKey[Any] | str) -> None:
        self._own_ctx = ctx.lenient
        self.service_name = key_name(key)
        ctx._provide(self.service_name, self)

    @property
    def ctx(self) -> Context:
        """The context this call runs on behalf of (the caller's, else the service's)."""
        caller = current_context.get()
        return caller.lenient if caller is not None else self._own_ctx

    @property
    def own_ctx(self) -> Context:
        """The service's own context, whoever is calling."""
        return self._own_ctx


async def _as_caller(awaitable: Awaitable[Any], ctx: Context) -> Any:
    token = current_context.set(ctx)
    try:
        return await awaitable
    finally:
        current_context.reset(token)


class _CallerStream(AsyncGenerator[Any, Any]):
    """An async generator whose body runs on behalf of ``ctx`` at every step.

    A step requested by code already acting for ``ctx``'s fiber (the usual
    ``async for`` in the caller's own task) is the generator's own step, with no
    wrapper: every context of one fiber resolves to the same caller (its lenient
    twin), so there is nothing to switch. The check is made when the step is
    requested (``__anext__`` is called), which ``async for`` does as it awaits it.
    """

    __slots__ = ("_ctx", "_fiber", "_gen")

    def __init__(self, gen: AsyncGenerator[Any, Any], ctx: Context) -> None:
        self._gen = gen
        self._ctx = ctx
        self._fiber = ctx.fiber

    def __aiter__(self) -> _CallerStream:
        return self

    def __anext__(self) -> Coroutine[Any, Any, Any]:
        caller = current_context.get()
        if caller is not None and caller.fiber is self._fiber:
            return self._gen.__anext__()
        return _as_caller(self._gen.__anext__(), self._ctx)

    async def asend(self, value: Any) -> Any:
        return await _as_caller(self._gen.asend(value), self._ctx)

    async def athrow(self, *args: Any) -> Any:
        return await _as_caller(self._gen.athrow(*args), self._ctx)

    async def aclose(self) -> None:
        await _as_caller(self._gen.aclose(), self._ctx)


def _bind(method: Callable[..., Any], ctx: Context) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        token = current_context.set(ctx)
        try:
            result = method(*args, **kwargs)
        finally:
            current_context.reset(token)
        if isinstance(result, Coroutine):
            return _as_caller(result, ctx)
        if isinstance(result, AsyncGeneratorType):
            return _CallerStream(result, ctx)
        return result

    return call


class ServiceHandle:
    """A service seen from one context; see the module docstring."""

    __slots__ = ("_ctx", "_service")

    def __init__(self, service: object, ctx: Context) -> None:
        object.__setattr__(self, "_service", service)
        object.__setattr__(self, "_ctx", ctx)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._service, name)
        if inspect.ismethod(value) and value.__self__ is self._service:
            return _bind(value, self._ctx)
        return value

    def __setattr__(self, name: str, value: object) -> None:
        setattr(self._service, name, value)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance() sees the service's class
        return type(self._service)

    def __repr__(self) -> str:
        return f"<handle of {self._service!r} for {self._ctx!r}>"

    def __eq__(self, other: object) -> bool:
        target = other._service if type(other) is ServiceHandle else other
        return self._service is target

    def __hash__(self) -> int:
        return id(self._service)


def unwrap(value: T) -> T:
    """The service behind a handle (or ``value`` itself)."""
    if type(value) is ServiceHandle:
        return cast(T, cast(ServiceHandle, value)._service)
    return value
