"""The ``bash`` service seam (SPEC §9): foreground runs and background tasks, not how.

An implementation (``bash-local`` runs local subprocesses) subclasses
:class:`BashExecutor` and fills in the abstract methods. The base class owns the
task-completion listener registry: :meth:`BashExecutor.on_task_done` subscribes on
behalf of the caller's fiber, and implementations call
:meth:`BashExecutor.notify_task_done` when a background task ends.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

from dsh.core.bash.types import (
    UNCONFINED,
    BashExecRequest,
    BashExecSpec,
    BashRunResult,
    BashTask,
    BashTaskRead,
    SandboxSupport,
)
from dsh.kernel import Context, Effect, EmitEvent, Service, ServiceKey

BASH_OUTPUT: EmitEvent[[object | None, str, str]] = EmitEvent(
    "bash/output",
    doc="""emit ``(agent, stream, text)``: output a foreground run produced just now, for
    display while the command runs (``stream`` is ``stdout`` or ``stderr``; ``agent``
    the spec's ``agent``). ``text`` is decoded UTF-8 (a character split across reads
    arrives whole), at most one read's worth; the run's result still holds what the
    model gets. Listeners must be fast and must not raise (a raise is logged and the
    command goes on).
    """,
)
"""Live output of a foreground bash run. See ``doc``."""

TaskDoneListener = Callable[[BashTask], Any]
"""Called with a finished background task; may return an awaitable (run as a task of its fiber)."""


class BashExecutor(Service, ABC):
    """Abstract base of every bash backend, provided as ``ctx[BASH]``.

    Construction provides the service and, first of all effects, registers the one
    that closes the listener registry on disposal. Disposal starts effects last-first
    without waiting for each, so an implementation's (later-registered, async)
    kill-everything teardown starts first and this synchronous close runs before any
    killed process can finish: completions caused by teardown stay silent.
    """

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, BASH)
        self._listeners: dict[object, tuple[TaskDoneListener, Context]] = {}
        self._closed = False
        ctx.effect(lambda: self._close_listeners, "bash listener registry")

    def _close_listeners(self) -> None:
        self._closed = True
        self._listeners.clear()

    # ------------------------------------------------------------ abstract API
    @abstractmethod
    def resolve(self, request: BashExecRequest) -> BashExecSpec:
        """Apply the implementation's defaults and caps; raise on an invalid request."""

    @abstractmethod
    async def run(self, spec: BashExecSpec) -> BashRunResult:
        """Run ``spec.command`` to completion.

        Raises only for infrastructure failures (bad workdir, missing shell, a signal
        aborted before the spawn). A non-zero exit, a timeout or an abort mid-run
        returns a result describing it.
        """

    @abstractmethod
    def start(self, spec: BashExecSpec) -> BashTask:
        """Start ``spec.command`` in the background and return its task at once.

        No timeout applies; ``spec.signal`` still stops it. A failing spawn is
        reported through the task (status ``killed``), never raised here.
        """

    @abstractmethod
    def get(self, task_id: str) -> BashTask | None:
        """The task with ``task_id``, or None."""

    @abstractmethod
    def list(self) -> list[BashTask]:
        """Every known task, in start order."""

    @abstractmethod
    def read_output(self, task_id: str) -> BashTaskRead:
        """Output produced since the previous read (never delivered twice); raise for an unknown id."""

    @abstractmethod
    def kill(self, task_id: str) -> bool:
        """Stop a running task; False if it had already finished. Raise for an unknown id."""

    @abstractmethod
    def kill_all(self) -> int:
        """Kill every process the executor started, at once and synchronously (what a
        SIGTERM/SIGHUP handler calls before exiting); never raises. Returns how many
        process groups (or equivalent units) were hit."""

    def sandbox_support(self) -> SandboxSupport:
        """What this executor's OS sandbox enforces (see :class:`SandboxSupport`).

        The permissions policy asks it whether bash under a mode is confined: if not,
        bash calls go through approvals instead. The base reports no sandbox;
        an implementation that confines commands overrides it (it may probe once).
        """
        return UNCONFINED

    # ------------------------------------------------------- completion events
    def on_task_done(self, listener: TaskDoneListener) -> Effect:
        """Call ``listener(task)`` whenever a background task finishes.

        The subscription is an effect of the caller's fiber: disposing the caller (or
        calling the returned effect) unsubscribes. Listener failures are logged and
        never reach the task.
        """
        caller = self.ctx
        token = object()
        listeners = self._listeners

        def body() -> Callable[[], None]:
            listeners[token] = (listener, caller)

            def unsubscribe() -> None:
                listeners.pop(token, None)

            return unsubscribe

        return caller.effect(body, "bash on_task_done")

    @property
    def task_done_listener_count(self) -> int:
        """How many ``on_task_done`` listeners are subscribed (0 once disposed)."""
        return len(self._listeners)

    def notify_task_done(self, task: BashTask) -> None:
        """Deliver ``task`` to every listener (for implementations); a no-op once disposed.

        Never raises: a listener that raises (or whose awaitable fails) is logged and
        the others still run.
        """
        if self._closed:
            return
        for listener, caller in tuple(self._listeners.values()):
            try:
                result = listener(task)
            except Exception as error:
                self._report(error)
                continue
            if inspect.isawaitable(result):
                caller.spawn(self._guard(result), name="bash on_task_done")

    async def _guard(self, awaitable: Awaitable[Any]) -> None:
        try:
            await awaitable
        except Exception as error:
            self._report(error)

    def _report(self, error: Exception) -> None:
        self.own_ctx.logger.error("bash onTaskDone listener threw: %r", error)


BASH: ServiceKey[BashExecutor] = ServiceKey("bash")
