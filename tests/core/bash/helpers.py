"""A stand-in bash executor whose background tasks never finish on their own.

Tests of the seam and of its consumers (``tool-bash``) script it: ``fire`` completes
a task, ``next_reads`` feeds ``read_output``, ``next_result`` feeds ``run``.
"""

from __future__ import annotations

import asyncio
from collections import deque

from dsh.core.bash import (
    BashExecRequest,
    BashExecSpec,
    BashExecutor,
    BashRunResult,
    BashTask,
    BashTaskRead,
    BashTaskStatus,
    CollectedOutput,
)
from dsh.kernel import Context


def empty_output() -> CollectedOutput:
    return CollectedOutput(text="", truncated=False)


class StubExecutor(BashExecutor):
    """Provides ``bash``; records what it was asked and answers from scripts."""

    name = "bash-stub"

    def __init__(self, ctx: Context, _config: object = None) -> None:
        super().__init__(ctx)
        self.tasks: dict[str, BashTask] = {}
        self.specs: list[BashExecSpec] = []
        self.next_reads: deque[BashTaskRead] = deque()
        self.next_result: BashRunResult | None = None

    def resolve(self, request: BashExecRequest) -> BashExecSpec:
        return BashExecSpec(
            command=request.command,
            workdir=request.workdir if request.workdir is not None else "/stub",
            timeout_ms=request.timeout_ms if request.timeout_ms is not None else 1000,
            signal=request.signal,
        )

    async def run(self, spec: BashExecSpec) -> BashRunResult:
        self.specs.append(spec)
        if self.next_result is not None:
            return self.next_result
        return BashRunResult(
            exit_code=0,
            signal=None,
            timed_out=False,
            aborted=False,
            timeout_ms=spec.timeout_ms,
            stdout=empty_output(),
            stderr=empty_output(),
        )

    def start(self, spec: BashExecSpec) -> BashTask:
        self.specs.append(spec)
        task = BashTask(
            id=f"bash-{len(self.tasks) + 1}", command=spec.command, done=asyncio.get_running_loop().create_future()
        )
        self.tasks[task.id] = task
        return task

    def get(self, task_id: str) -> BashTask | None:
        return self.tasks.get(task_id)

    def list(self) -> list[BashTask]:
        return list(self.tasks.values())

    def read_output(self, task_id: str) -> BashTaskRead:
        task = self.tasks.get(task_id)
        if task is None:
            raise KeyError(f'unknown bash task "{task_id}"')
        if self.next_reads:
            return self.next_reads.popleft()
        return BashTaskRead(task=task, delta="", lossy=False)

    def kill(self, task_id: str) -> bool:
        task = self.tasks[task_id]
        if task.status != "running":
            return False
        task.status = "killed"
        return True

    def kill_all(self) -> int:
        running = [task for task in self.tasks.values() if task.status == "running"]
        for task in running:
            task.status = "killed"
        return len(running)


def fire(
    executor: BashExecutor,
    task: BashTask,
    status: BashTaskStatus = "completed",
    exit_code: int | None = 0,
    signal: str | None = None,
) -> None:
    """Finish ``task`` the way an implementation would: record, notify, resolve ``done``."""
    task.status = status
    task.exit_code = exit_code
    task.signal = signal
    executor.notify_task_done(task)
    if not task.done.done():
        task.done.set_result(None)
