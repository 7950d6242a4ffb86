"""The driver's side of a fleet: jobs over Ray actors, and what happens when one dies.

:func:`run_fleet` starts ``workers`` :class:`~dsh.cli.fleet.worker.FleetWorker` actors
(through ``new_worker``) and keeps ``per_worker`` jobs in flight on each. Every task
gets its session id here, before it first runs, so any worker can resume it.

A worker's death is Ray's ``RayActorError`` on every call that was in flight on it
(Ray detects a dead process itself; nothing here polls). Each of those jobs goes back
to the front of the queue as its next attempt, which another worker resumes from the
log, and a replacement worker is started (at most ``workers`` replacements over the
run, so a task that kills every worker running it ends the run: once no worker is
left, every task still waiting gets a result with ``error``). Ownership: every coroutine this starts is
awaited or cancelled before :func:`run_fleet` returns.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh.cli.fleet.tasks import BatchTask, TaskResult
from dsh.cli.fleet.worker import Job, WorkerInfo


@dataclass
class _Run:
    """The shared state of one :func:`run_fleet` call."""

    total: int
    on_result: Callable[[TaskResult], None]
    queue: list[Job] = field(default_factory=list)
    results: list[TaskResult] = field(default_factory=list)
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # the queue has a job, or the run ended
    done: asyncio.Event = field(default_factory=asyncio.Event)
    live: int = 0  # workers alive
    failure: Exception | None = None  # what ended the run early (Ray refused to start a worker, say)

    def put(self, job: Job, *, first: bool = False) -> None:
        self.queue.insert(0, job) if first else self.queue.append(job)
        self.ready.set()

    def finish(self, result: TaskResult) -> None:
        self.results.append(result)
        self.on_result(result)
        if len(self.results) == self.total:
            self.done.set()
            self.ready.set()

    async def take(self) -> Job | None:
        """The next job, waiting for one; None once the run is over."""
        while not self.queue and not self.done.is_set():
            self.ready.clear()
            await self.ready.wait()
        return self.queue.pop(0) if self.queue else None


async def run_fleet(
    tasks: Sequence[BatchTask],
    *,
    new_worker: Callable[[], Any],
    workers: int,
    per_worker: int,
    on_result: Callable[[TaskResult], None],
    on_worker: Callable[[int, WorkerInfo], None],
    on_death: Callable[[int, int], None],
) -> list[TaskResult]:
    """Run every task on the fleet; the results in the order they finished.

    ``new_worker()`` returns a new actor handle; ``on_result`` is called once per
    task as it finishes, ``on_worker(number, info)`` once each worker answers,
    ``on_death(number, jobs)`` when worker ``number`` died with ``jobs`` in flight.
    An error starting or calling a worker other than its death (Ray refusing the
    actor, say) ends the run: it is raised here once every coroutine has stopped.
    """
    from ray.exceptions import RayActorError

    run = _Run(total=len(tasks), on_result=on_result)
    for task in tasks:
        run.put(Job(task=task, session_id=str(uuid.uuid4())))
    replacements = workers
    started: list[asyncio.Task[None]] = []

    def retry(job: Job) -> None:
        run.put(Job(task=job.task, session_id=job.session_id, attempt=job.attempt + 1), first=True)

    def died(number: int, lost: int) -> None:
        nonlocal replacements
        run.live -= 1
        on_death(number, lost)
        if replacements > 0:
            replacements -= 1
            start(number + workers)
        elif run.live == 0:
            for job in run.queue:
                assert isinstance(job.task.id, str)  # read_tasks names every task
                error = "no worker left to run it (every worker died)"
                run.finish(TaskResult(id=job.task.id, session_id=job.session_id, attempts=job.attempt, error=error))
            run.queue.clear()

    async def worker(number: int) -> None:
        try:
            await serve(number)
        except Exception as error:
            run.failure = error
            run.done.set()
            run.ready.set()

    async def serve(number: int) -> None:
        handle = new_worker()
        in_flight: set[Job] = set()
        dead = asyncio.Event()

        async def slot() -> None:
            while not dead.is_set() and (job := await run.take()) is not None:
                in_flight.add(job)
                try:
                    result: TaskResult = await handle.run.remote(job)
                except RayActorError:  # each slot puts its own job back: none is lost or doubled
                    retry(job)
                    if not dead.is_set():
                        dead.set()
                        died(number, len(in_flight))
                    return
                finally:
                    in_flight.discard(job)
                run.finish(result)

        try:
            info: WorkerInfo = await handle.info.remote()
        except RayActorError:
            died(number, 0)
            return
        on_worker(number, info)
        await asyncio.gather(*(slot() for _ in range(per_worker)))

    def start(number: int) -> None:
        run.live += 1
        started.append(asyncio.ensure_future(worker(number)))

    for number in range(1, workers + 1):
        start(number)
    try:
        await run.done.wait()
    finally:
        for each in started:
            each.cancel()
        await asyncio.gather(*started, return_exceptions=True)
    if run.failure is not None:
        raise run.failure
    return run.results
