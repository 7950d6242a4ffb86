"""Fibers: one loaded plugin instance each, with its effects, tasks and children.

States::

    PENDING ──deps met──▶ LOADING ──apply ok──▶ ACTIVE ──dep lost──▶ UNLOADING ──▶ PENDING
                            │                     │
                            └─apply raised─▶ FAILED└──dispose()──▶ UNLOADING ──▶ DISPOSED

A fiber is awaitable: ``await ctx.plugin(p)`` resolves with the fiber once it is
ACTIVE, or at once if it is waiting for an ``inject``ed service, and raises if its
config is invalid or its ``apply`` raised. :meth:`Fiber.dispose` returns only once
the fiber, its children, its dependents and its tasks are quiescent.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

from dsh.kernel.config import KernelError, validate_config
from dsh.kernel.current import current_context
from dsh.kernel.effects import Effect

if TYPE_CHECKING:
    from dsh.kernel.context import Context
    from dsh.kernel.plugin import PluginInfo
    from dsh.kernel.runtime import Runtime

_log = logging.getLogger("dsh.kernel")


class FiberState(enum.Enum):
    PENDING = "pending"
    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"
    UNLOADING = "unloading"
    DISPOSED = "disposed"


class Fiber:
    """One plugin instance in the tree. Created by ``ctx.plugin``; see the module docstring."""

    def __init__(self, runtime: Runtime, parent: Fiber | None, info: PluginInfo | None, raw_config: object) -> None:
        self.runtime = runtime
        self.parent = parent
        self.info = info
        self.raw_config = raw_config
        self.config: Any = None
        self.instance: Any = None
        self.error: BaseException | None = None
        self.state = FiberState.ACTIVE if info is None else FiberState.PENDING
        self.ctx: Context
        self._effects: list[Effect] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ready: asyncio.Future[Fiber] | None = None
        self._boot_task: asyncio.Task[None] | None = None
        self._dispose_task: asyncio.Future[None] | None = None
        self._link: Effect | None = None
        self._configured = False

    # ----------------------------------------------------------------- identity
    @property
    def name(self) -> str:
        return self.info.name if self.info is not None else "root"

    @property
    def inject(self) -> tuple[str, ...]:
        return self.info.inject if self.info is not None else ()

    @property
    def alive(self) -> bool:
        """True until the fiber starts unloading for good (effects may be created)."""
        return self.state in (FiberState.ACTIVE, FiberState.LOADING)

    def __repr__(self) -> str:
        return f"<Fiber {self.name} {self.state.value}>"

    # ------------------------------------------------------------------ awaiting
    def _ready_future(self) -> asyncio.Future[Fiber]:
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
        return self._ready

    def _resolve(self) -> None:
        future = self._ready_future()
        if not future.done():
            future.set_result(self)

    def _reject(self, error: BaseException) -> None:
        future = self._ready_future()
        if not future.done():
            future.set_exception(error)
        else:
            _log.error("plugin %s failed to re-apply: %r", self.name, error, exc_info=error)

    def __await__(self) -> Generator[Any, None, Fiber]:
        return self._ready_future().__await__()

    # ------------------------------------------------------------------ effects
    def _add_effect(self, effect: Effect) -> None:
        if not self.alive:
            raise KernelError("cannot create effect on inactive context")
        self._effects.append(effect)

    def _forget_effect(self, effect: Effect) -> None:
        try:
            self._effects.remove(effect)
        except ValueError:
            pass

    @property
    def effect_count(self) -> int:
        return len(self._effects)

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]:
        """Run ``coro`` as a task owned by this fiber (cancelled and awaited on dispose)."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            error = task.exception()
            _log.error("task of plugin %s failed: %r", self.name, error, exc_info=error)

    @property
    def task_count(self) -> int:
        return len(self._tasks)

    # ---------------------------------------------------------------- lifecycle
    def _schedule_boot(self) -> None:
        if self._boot_task is None or self._boot_task.done():
            self._boot_task = asyncio.get_running_loop().create_task(self._boot(), name=f"boot {self.name}")

    async def _boot(self) -> None:
        assert self.info is not None
        if self.state is not FiberState.PENDING:
            return
        if not self._configured:
            try:
                self.config = validate_config(self.info.name, self.info.config_model, self.raw_config)
            except Exception as error:
                self._fail(error)
                return
            self._configured = True
        if not self.runtime.satisfied(self.inject):
            self._resolve()
            return
        self.state = FiberState.LOADING
        token = current_context.set(self.ctx)
        try:
            result = self.info.start(self.ctx, self.config)
            if isinstance(result, Awaitable):
                result = await result
        except BaseException as error:
            current_context.reset(token)
            await self._dispose_effects()
            if isinstance(error, asyncio.CancelledError):
                raise
            self._fail(error)
            return
        current_context.reset(token)
        self.instance = result
        self.state = FiberState.ACTIVE
        self._resolve()
        if self.runtime.provides(self):
            self.runtime.reconcile()

    def _fail(self, error: BaseException) -> None:
        self.error = error
        self.state = FiberState.FAILED
        self.runtime.forget(self)
        self._reject(error)

    async def _unload(self) -> None:
        """Dependency lost: undo this apply and wait to be applied again."""
        if self.state is not FiberState.ACTIVE:
            return
        self.state = FiberState.UNLOADING
        await self._withdraw()
        await self._dispose_effects()
        if self.state is FiberState.UNLOADING:
            self.state = FiberState.PENDING
            self.instance = None
            if self.runtime.satisfied(self.inject):
                self._schedule_boot()

    async def _withdraw(self) -> None:
        if self.runtime.provides(self):
            pending = self.runtime.reconcile()
            if pending:
                await asyncio.gather(*pending)

    async def _dispose_effects(self) -> None:
        effects, self._effects = self._effects[::-1], []
        pending: list[Awaitable[None]] = []
        for effect in effects:
            result = effect()
            if result is not None:
                pending.append(result)
        tasks = [task for task in self._tasks if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        for item in pending:
            try:
                await item
            except Exception as error:  # pragma: no cover - run_disposers already logs every failure
                _log.error("disposing %s failed: %r", self.name, error)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def dispose(self) -> asyncio.Future[None]:
        """Tear the fiber down to quiescence; idempotent, safe to await many times."""
        if self._dispose_task is None:
            self._dispose_task = asyncio.ensure_future(self._dispose())
        return self._dispose_task

    async def _dispose(self) -> None:
        was = self.state
        self.state = FiberState.UNLOADING
        boot = self._boot_task
        if boot is not None and not boot.done() and boot is not asyncio.current_task():
            boot.cancel()
            try:
                await boot
            except asyncio.CancelledError:
                pass
        if was is FiberState.ACTIVE:
            await self._withdraw()
        await self._dispose_effects()
        self.state = FiberState.DISPOSED
        self.runtime.forget(self)
        if self._link is not None:
            self._link.detach()
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(self)


def link_child(parent: Fiber, child: Fiber) -> None:
    """Make ``child``'s disposal an effect of ``parent``."""

    def dispose_child() -> Awaitable[None]:
        return child.dispose()

    effect = Effect(parent, f"plugin {child.name}", [dispose_child])
    parent._add_effect(effect)
    child._link = effect
