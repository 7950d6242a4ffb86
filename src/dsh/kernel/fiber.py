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
from collections.abc import Awaitable, Coroutine, Generator, Iterator
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
    """One plugin instance in the tree. Created by ``ctx.plugin``; see the module docstring.

    ``config`` is the validated config the plugin received, ``instance`` what its
    ``apply`` returned (the object, for a class plugin), ``error`` why it FAILED.
    """

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
        self._effects: dict[Effect, None] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._settling: set[asyncio.Task[Any]] = set()
        self._ready: asyncio.Future[Fiber] | None = None
        self._boot_task: asyncio.Task[None] | None = None
        self._unload_task: asyncio.Task[None] | None = None
        self._dispose_task: asyncio.Task[None] | None = None
        self._link: Effect | None = None
        self._children: dict[Fiber, None] = {}
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
        """True while effects may be created: the fiber is LOADING or ACTIVE."""
        return self.state is FiberState.ACTIVE or self.state is FiberState.LOADING

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
        self._effects[effect] = None

    def _forget_effect(self, effect: Effect) -> None:
        self._effects.pop(effect, None)

    @property
    def effect_count(self) -> int:
        """How many effects the fiber owns now (child fibers count as one each)."""
        return len(self._effects)

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]:
        """Run ``coro`` as a task owned by this fiber (cancelled and awaited on dispose).

        A failure of the task is logged. Raises :class:`KernelError` (closing
        ``coro``) once the fiber is disposed: nothing would ever cancel the task.
        """
        return self._spawn(coro, name, report=True)

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str | None, report: bool) -> asyncio.Task[Any]:
        if self.state is FiberState.DISPOSED:
            coro.close()
            raise KernelError(f'cannot start a task on disposed plugin "{self.name}"')
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done if report else self._tasks.discard)
        return task

    def _settle(self, undo: Coroutine[Any, Any, None], name: str) -> None:
        """Finish an async undo in the background; disposal waits for it but never cancels it."""
        task = asyncio.get_running_loop().create_task(undo, name=name)
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled():
            error = task.exception()
            if error is not None:
                _log.error("task of plugin %s failed: %r", self.name, error, exc_info=error)

    @property
    def task_count(self) -> int:
        """How many tasks the fiber owns that have not finished."""
        return len(self._tasks)

    # ---------------------------------------------------------------- lifecycle
    def _schedule_boot(self) -> None:
        """Start (once) a boot of this PENDING fiber; only disposal moves it out of PENDING meanwhile."""
        if self._boot_task is None or self._boot_task.done():
            self._boot_task = asyncio.get_running_loop().create_task(self._boot(), name=f"boot {self.name}")

    async def _boot(self) -> None:
        info = self.info
        assert info is not None
        if not self._configured:
            try:
                self.config = validate_config(info.name, info.config_model, self.raw_config)
            except Exception as error:
                self._fail(error)
                return
            self._configured = True
        if not self.runtime.satisfied(info.inject):
            self._resolve()
            return
        self.state = FiberState.LOADING
        token = current_context.set(self.ctx)
        try:
            result = info.start(self.ctx, self.config)
            if isinstance(result, Awaitable):
                result = await result
        except BaseException as error:
            interrupted = self.disposing
            if not interrupted:
                self.state = FiberState.UNLOADING
            await self._dispose_effects()
            if isinstance(error, asyncio.CancelledError):
                raise
            if interrupted:  # the disposal broke the apply: the load resolves
                _log.debug("plugin %s raised while disposed during apply: %r", self.name, error)
                return
            self._fail(error)
            return
        finally:
            current_context.reset(token)
        if self.disposing:
            return
        self.instance = result
        self.state = FiberState.ACTIVE
        self._resolve()
        if info.inject or self.runtime.provides(self):
            self.runtime.reconcile()

    def _fail(self, error: BaseException) -> None:
        self.error = error
        self.state = FiberState.FAILED
        self.runtime.forget(self)
        self._reject(error)

    def _schedule_unload(self) -> asyncio.Task[None]:
        if self._unload_task is None or self._unload_task.done():
            self._unload_task = asyncio.get_running_loop().create_task(self._unload(), name=f"unload {self.name}")
        return self._unload_task

    async def _unload(self) -> None:
        """A dependency was lost: undo this apply and wait to be applied again."""
        if self.state is not FiberState.ACTIVE or self._dispose_task is not None:
            return
        self.state = FiberState.UNLOADING
        await self._withdraw()
        await self._dispose_effects()
        if self.disposing:
            return
        self.state = FiberState.PENDING
        self.instance = None
        if self.runtime.satisfied(self.inject):
            self._schedule_boot()

    async def _withdraw(self) -> None:
        """Unload the dependents of the services this fiber provides, and wait for them."""
        if self.runtime.provides(self):
            pending = self.runtime.reconcile()
            if pending:
                await asyncio.wait(pending)

    async def _dispose_effects(self) -> None:
        effects, self._effects = self._effects, {}
        pending: list[asyncio.Future[Any]] = list(self._settling)
        for effect in reversed(effects):
            result = effect()
            if result is not None:
                pending.append(asyncio.ensure_future(result))
        while True:  # tasks started by a disposer while we wait are swept on the next pass
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
                pending = []
            elif not tasks:
                return
            if tasks:
                await asyncio.wait(tasks)

    def dispose(self) -> asyncio.Future[None]:
        """Tear the fiber down to quiescence; idempotent, safe to await many times.

        Children are disposed, dependents unloaded, effects undone (last-first,
        async ones awaited together, failures logged) and tasks cancelled and
        awaited before the returned future resolves. Cancelling a caller that
        awaits it does not interrupt the teardown.
        """
        if self._dispose_task is None:
            self._dispose_task = asyncio.get_running_loop().create_task(self._dispose(), name=f"dispose {self.name}")
        return asyncio.shield(self._dispose_task)

    @property
    def disposing(self) -> bool:
        """True once :meth:`dispose` was called (the fiber will never be ACTIVE again)."""
        return self._dispose_task is not None

    async def _dispose(self) -> None:
        was = self.state
        self.state = FiberState.UNLOADING
        boot, unload = self._boot_task, self._unload_task
        if boot is not None and not boot.done():
            if was is FiberState.PENDING or was is FiberState.LOADING:
                boot.cancel()  # stop an apply in flight; a failing boot is left to finish its rollback
            await asyncio.wait([boot])
        if unload is not None and not unload.done():
            await asyncio.wait([unload])  # it sees _disposing and stops after undoing its effects
        await self._withdraw()
        await self._dispose_effects()
        self.state = FiberState.DISPOSED
        self.runtime.forget(self)
        if self._link is not None:
            self._link.detach()
        if self.parent is not None:
            self.parent._children.pop(self, None)
        self._resolve()

    @property
    def children(self) -> list[Fiber]:
        """The child fibers loaded through this fiber's context and not yet disposed, in load order."""
        return list(self._children)

    def descendants(self) -> Iterator[Fiber]:
        """Every fiber below this one, depth first in load order (includes nest their trees here)."""
        for child in list(self._children):
            yield child
            yield from child.descendants()


def link_child(parent: Fiber, child: Fiber) -> None:
    """Make ``child``'s disposal an effect of ``parent``."""

    def dispose_child() -> Awaitable[None]:
        return child.dispose()

    effect = Effect(parent, f"plugin {child.name}", [dispose_child])
    parent._add_effect(effect)
    child._link = effect
    parent._children[child] = None
