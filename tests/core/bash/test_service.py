"""The bash executor seam (SPEC §9, describe ``BashExecutor service seam``), plus unload and rollback."""

from __future__ import annotations

import asyncio
import logging

import pytest

from dsh.core.bash import BASH, BashExecRequest, BashExecutor, BashTask
from dsh.kernel import Context, Fiber, KernelError, PluginSpec, unwrap
from tests.core.bash.helpers import StubExecutor, fire


async def listening_child(root: Context, seen: list[str]) -> Fiber:
    """A plugin that injects ``bash`` and records every completion it hears of."""

    def apply(ctx: Context, _config: object) -> None:
        ctx[BASH].on_task_done(lambda task: seen.append(task.id))

    return await root.plugin(PluginSpec(name="listener", apply=apply, inject=[BASH.name]))


async def test_registers_as_ctx_bash_and_serves_the_abstract_api(root: Context, bash: BashExecutor) -> None:
    """registers as ctx.bash and serves the abstract API"""
    assert isinstance(bash, BashExecutor)
    assert isinstance(unwrap(bash), StubExecutor)
    spec = bash.resolve(BashExecRequest(command="true"))
    task = bash.start(spec)
    assert task.status == "running"
    assert bash.get(task.id) is task
    assert bash.get("nope") is None
    assert bash.list() == [task]
    assert bash.kill(task.id) is True
    assert bash.kill(task.id) is False
    assert bash.kill_all() == 0
    assert bash.start(spec).status == "running"
    assert bash.kill_all() == 1
    result = await bash.run(spec)
    assert result.exit_code == 0
    assert result.signal is None


async def test_on_task_done_delivers_completions_to_registered_listeners(bash: BashExecutor) -> None:
    """onTaskDone delivers completions to registered listeners"""
    seen: list[tuple[str, str]] = []
    bash.on_task_done(lambda task: seen.append((task.id, task.status)))
    bash.on_task_done(lambda task: seen.append(("second", task.id)))
    task = bash.start(bash.resolve(BashExecRequest(command="sleep 1")))
    fire(bash, task)
    await task.done
    assert seen == [(task.id, "completed"), ("second", task.id)]


async def test_on_task_done_disposer_unsubscribes_the_listener(bash: BashExecutor) -> None:
    """onTaskDone disposer unsubscribes the listener"""
    seen: list[str] = []
    dispose = bash.on_task_done(lambda task: seen.append(task.id))
    assert bash.task_done_listener_count == 1
    dispose()
    dispose()
    assert bash.task_done_listener_count == 0
    fire(bash, bash.start(bash.resolve(BashExecRequest(command="x"))))
    assert seen == []


async def test_listeners_registered_from_a_fiber_are_removed_on_dispose_hmr_safety(
    root: Context, bash: BashExecutor
) -> None:
    """listeners registered from a fiber are removed on dispose (HMR safety)"""
    seen: list[str] = []
    child = await listening_child(root, seen)
    assert bash.task_done_listener_count == 1
    first = bash.start(bash.resolve(BashExecRequest(command="a")))
    fire(bash, first)
    assert seen == [first.id]
    await child.dispose()
    assert bash.task_done_listener_count == 0
    fire(bash, bash.start(bash.resolve(BashExecRequest(command="b"))))
    assert seen == [first.id]


async def test_silences_listeners_once_the_service_fiber_is_disposed(
    root: Context, stub_fiber: Fiber, bash: BashExecutor
) -> None:
    """silences listeners once the service fiber is disposed"""
    seen: list[str] = []
    bash.on_task_done(lambda task: seen.append(task.id))
    task = bash.start(bash.resolve(BashExecRequest(command="x")))
    service = unwrap(bash)
    await stub_fiber.dispose()
    assert root.get(BASH) is None
    assert service.task_done_listener_count == 0
    fire(service, task)
    assert seen == []
    assert task.done.done()


# ------------------------------------------------------------------------ beyond the titles


async def test_a_throwing_listener_is_logged_and_later_listeners_still_run(
    bash: BashExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    """a throwing on_task_done listener is logged to stderr's logger; later listeners still run"""
    seen: list[str] = []

    def explode(_task: BashTask) -> None:
        raise RuntimeError("listener exploded")

    bash.on_task_done(explode)
    bash.on_task_done(lambda task: seen.append(task.id))
    task = bash.start(bash.resolve(BashExecRequest(command="x")))
    with caplog.at_level(logging.ERROR):
        fire(bash, task)
    assert seen == [task.id]
    assert "bash onTaskDone listener threw" in caplog.text
    assert "listener exploded" in caplog.text


async def test_an_async_listener_runs_as_a_task_of_its_fiber_and_its_failure_is_logged(
    root: Context, bash: BashExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    """an async on_task_done listener runs on the listener's fiber; a failure is logged"""
    ran: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def record(task: BashTask) -> None:
        ran.set_result(task.id)

    async def explode(_task: BashTask) -> None:
        raise RuntimeError("async listener exploded")

    bash.on_task_done(record)
    bash.on_task_done(explode)
    task = bash.start(bash.resolve(BashExecRequest(command="x")))
    with caplog.at_level(logging.ERROR):
        fire(bash, task)
        assert await ran == task.id
        while root.fiber.task_count:
            await asyncio.sleep(0)
    assert "async listener exploded" in caplog.text


async def test_a_second_provider_is_refused_and_the_key_is_reusable_after_unload(
    root: Context, stub_fiber: Fiber
) -> None:
    """rollback: a refused or failing provider leaves nothing behind and "bash" stays reusable"""
    first = unwrap(root[BASH])
    with pytest.raises(KernelError, match="already provided"):
        await root.plugin(StubExecutor)
    assert unwrap(root[BASH]) is first

    class Exploding(StubExecutor):
        def __init__(self, ctx: Context, config: object = None) -> None:
            super().__init__(ctx, config)
            raise RuntimeError("constructor exploded")

    await stub_fiber.dispose()
    assert root.get(BASH) is None
    with pytest.raises(RuntimeError, match="constructor exploded"):
        await root.plugin(Exploding)
    assert root.get(BASH) is None
    await root.plugin(StubExecutor)
    assert isinstance(unwrap(root[BASH]), StubExecutor)
    assert unwrap(root[BASH]) is not first
