"""One worker of a fleet: many agents on one dsh kernel, in one process.

:class:`FleetWorker` is a plain class; ``dsh batch`` makes it a Ray actor (an asyncio
actor: Ray runs every method on one event loop, up to the actor's ``max_concurrency``
at once), and the tests drive it directly. It boots the command's plugin tree once,
on its first job, and runs each :class:`Job` as its own agent in a child fiber of
that tree's root, disposed when the job ends (the turn's end has flushed the log).

A job's first attempt creates the session ``job.session_id`` in the store. A later
attempt (the worker that ran it died) resumes it from the log: loading closes the
turn the death interrupted (an interrupted ``tool/result`` for a call that never got
one, ``turn/end {kind: "interrupted"}``), and a new turn tells the model to go on,
so tool calls that completed are read from the log, not run again. A session whose
writer lock is still held (a PostgreSQL lease of the dead worker until it expires)
is retried every :data:`LOCK_RETRY_S` for up to ``lock_wait_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import Mapping

import msgspec
from msgspec import UNSET, Struct

from dsh.cli.agent import agent_model, turn_outcome
from dsh.cli.boot import booted
from dsh.cli.fleet.tasks import BatchTask, TaskResult
from dsh.cli.limits import TurnBudget
from dsh.cli.profile import DEFAULT_SYSTEM_PROMPT, Tree
from dsh.cli.usage import price_of
from dsh.core.agent import AGENTS, Agent, AgentOptions, AgentRegistry, CreateAgentOptions, ResumeAgentOptions
from dsh.core.errors import HarnessError, error_code, error_message
from dsh.core.llm import PluginSource, text, variant_tag
from dsh.core.session import InterruptedReason, SessionMeta, UserMessageEvent
from dsh.core.usage import summarize_usage
from dsh.kernel import Context, PluginSpec
from dsh.plugins import gc_tuning

CONTINUE_PROMPT = (
    "This task's previous run was interrupted: the worker running it stopped. Continue the task from where it "
    "left off. The tool results above already happened; do not repeat a call that has a result."
)
"""The message of the turn that continues a task after its worker died."""

BATCH_SOURCE = PluginSource(plugin="batch")
"""The source of :data:`CONTINUE_PROMPT` in the log: the batch runner, not the user."""

LOCK_RETRY_S = 0.5
"""Seconds between two attempts to resume a session another process still holds."""


async def pause_for_lock() -> None:
    """Wait :data:`LOCK_RETRY_S` before asking for a held session again."""
    await asyncio.sleep(LOCK_RETRY_S)


class Job(Struct, frozen=True, kw_only=True):
    """One attempt at a task: its session's id and which attempt this is (1: the first)."""

    task: BatchTask
    session_id: str
    attempt: int = 1


class WorkerInfo(Struct, frozen=True):
    """Where a worker runs: its process id and host name."""

    pid: int
    host: str


class FleetWorker:
    """Runs jobs as agents of one booted tree (see the module docstring).

    ``environ`` is set in the process before the tree boots (the provider's key and
    base URL, which the adapters read from the environment). A task's agent asks the
    task's model, else the tree's (``--model`` or the profile's), else the first one the
    tree serves. ``lock_wait_s`` bounds how long a resume waits for
    a dead writer's lock. Jobs run concurrently; :meth:`close` disposes the tree
    (flushing every log) and is idempotent.
    """

    def __init__(
        self,
        tree: Tree,
        environ: Mapping[str, str],
        *,
        system_prompt: str | None = None,
        lock_wait_s: float = 60.0,
    ) -> None:
        self.tree = tree
        self.environ = dict(environ)
        self.system_prompt = system_prompt or DEFAULT_SYSTEM_PROMPT
        self.lock_wait_s = lock_wait_s
        self._stack = contextlib.AsyncExitStack()
        self._root: Context | None = None
        self._booting = asyncio.Lock()

    async def info(self) -> WorkerInfo:
        """This worker's process id and host (what to kill to test a death)."""
        return WorkerInfo(os.getpid(), socket.gethostname())

    async def root(self) -> Context:
        """The booted tree's root, booted on the first call (concurrent callers wait for the one boot)."""
        async with self._booting:
            if self._root is None:
                os.environ.update(self.environ)
                root = await self._stack.enter_async_context(booted(self.tree))
                await root.plugin(gc_tuning)  # after the boot: it freezes the booted tree out of collections
                self._root = root
            return self._root

    async def close(self) -> None:
        """Dispose the tree: every agent stops, every log is flushed, the store closes."""
        self._root = None
        await self._stack.aclose()

    async def run(self, job: Job) -> TaskResult:
        """Run ``job`` to the end of its turn and say how it ended; never raises for the task's own failure.

        A session that cannot be created or resumed gives a result with ``error``.
        """
        root = await self.root()
        started = time.monotonic()
        contexts: list[Context] = []
        fiber = await root.plugin(
            PluginSpec(
                name=f"batch task {job.task.id}", apply=lambda ctx, _config: contexts.append(ctx), inject=["agents"]
            )
        )
        try:
            result = await self._drive(contexts[0], job)
        finally:
            await fiber.dispose()
        duration_ms = int((time.monotonic() - started) * 1000)
        return msgspec.structs.replace(result, duration_ms=duration_ms, attempts=job.attempt)

    async def _drive(self, ctx: Context, job: Job) -> TaskResult:
        task = job.task
        assert isinstance(task.id, str)  # read_tasks names every task
        model = task.model or agent_model(ctx, self.tree)
        options = AgentOptions(model=model, system_prompt=self.system_prompt, max_steps=task.max_steps or None)
        agents = ctx[AGENTS]
        try:
            agent = await self._start(agents, job, options)
        except HarnessError as error:
            return TaskResult(
                id=task.id, session_id=job.session_id, error=f"[{error_code(error)}] {error_message(error)}"
            )
        session = agent.session
        if task.max_turns:
            TurnBudget(ctx, agent, task.max_turns)
        outcome = turn_outcome(session, 0).reason
        since = session.seq
        if outcome is None or type(outcome) is InterruptedReason:
            if any(type(event) is UserMessageEvent for event in session.events):
                agent.send([text(CONTINUE_PROMPT)], source=BATCH_SOURCE)
            else:
                agent.send([text(task.prompt)])
            await agent.when_idle()
            outcome = turn_outcome(session, since).reason
        usage = summarize_usage(session.events, price_of(model))
        return TaskResult(
            id=task.id,
            session_id=session.id,
            end_reason=variant_tag(outcome) or UNSET,
            usage=usage.tokens,
            cost=usage.cost,
        )

    async def _start(self, agents: AgentRegistry, job: Job, options: AgentOptions) -> Agent:
        """A new agent on the job's session: created on the first attempt, else resumed (waiting out a lock)."""
        if job.attempt == 1:
            meta = SessionMeta(cwd=job.task.workspace)
            return agents.create(
                CreateAgentOptions(agent_id=job.session_id, session_id=job.session_id, meta=meta, agent_options=options)
            )
        deadline = time.monotonic() + self.lock_wait_s
        resume = ResumeAgentOptions(agent_id=job.session_id, resume_session_id=job.session_id, agent_options=options)
        while True:
            try:
                return await agents.resume(resume)
            except HarnessError as error:
                if error.code == "SESSION_NOT_FOUND":  # the worker died before anything was stored
                    return await self._start(agents, Job(task=job.task, session_id=job.session_id), options)
                if error.code != "SESSION_LOCKED" or time.monotonic() >= deadline:
                    raise
            await pause_for_lock()
