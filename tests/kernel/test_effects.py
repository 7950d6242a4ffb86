"""Effects: registrations that undo themselves (SPEC §1.3)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator

import pytest

from dsh.kernel import Context, Disposer, KernelError, PluginSpec
from tests.kernel.helpers import PING, leftovers, ticks


async def test_effect_runs_its_body_at_once_and_returns_an_idempotent_disposer() -> None:
    """The body runs inside ctx.effect; calling the Effect twice undoes once."""
    root = Context()
    log: list[str] = []

    def body() -> Callable[[], None]:
        log.append("do")
        return lambda: log.append("undo")

    effect = root.effect(body, "demo")
    assert log == ["do"]
    assert not effect.disposed
    assert root.fiber.effect_count == 1
    assert effect() is None
    assert effect() is None
    assert log == ["do", "undo"]
    assert effect.disposed
    assert root.fiber.effect_count == 0


async def test_an_effect_whose_body_returns_none_has_nothing_to_undo() -> None:
    """A None body is still an effect of the fiber, with an empty undo."""
    root = Context()
    effect = root.effect(lambda: None)
    assert root.fiber.effect_count == 1
    assert effect() is None
    assert root.fiber.effect_count == 0


async def test_a_generator_effect_undoes_its_disposers_last_first() -> None:
    """Each yielded disposer is collected; the effect undoes them in reverse order."""
    root = Context()
    log: list[str] = []

    def body() -> Generator[Disposer, None, None]:
        log.append("a")
        yield lambda: log.append("undo a")
        log.append("b")
        yield lambda: log.append("undo b")

    effect = root.effect(body)
    assert log == ["a", "b"]
    effect()
    assert log == ["a", "b", "undo b", "undo a"]


async def test_a_generator_effect_that_raises_after_two_yields_rolls_both_back_in_reverse() -> None:
    """The exception reaches the caller after the two collected disposers ran, last first."""
    root = Context()
    log: list[str] = []

    def body() -> Generator[Disposer, None, None]:
        yield lambda: log.append("undo first")
        yield lambda: log.append("undo second")
        raise ValueError("change listener threw")

    with pytest.raises(ValueError, match="change listener threw"):
        root.effect(body, "registration")
    assert log == ["undo second", "undo first"]
    assert root.fiber.effect_count == 0


async def test_a_rolled_back_generator_leaves_no_listener_behind() -> None:
    """Listeners registered inside a failing generator effect are removed by its rollback."""
    root = Context()

    def body() -> Generator[Disposer, None, None]:
        yield root.on(PING, lambda _text: None)
        yield root.on(PING, lambda _text: None)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        root.effect(body)
    assert root.listener_count(PING) == 0
    assert leftovers(root) == []


async def test_an_async_rollback_disposer_is_awaited_by_the_fiber_dispose() -> None:
    """An async disposer run by a rollback finishes in the background; disposing the fiber waits for it."""
    root = Context()
    fiber = await root.plugin(PluginSpec(name="owner", apply=lambda ctx, _config: None))
    gate = asyncio.Event()
    log: list[str] = []

    async def slow_undo() -> None:
        await gate.wait()
        log.append("undone")

    def body() -> Generator[Disposer, None, None]:
        yield lambda: log.append("sync undo")
        yield slow_undo
        raise ValueError("nope")

    with pytest.raises(ValueError):
        fiber.ctx.effect(body)
    disposing = asyncio.ensure_future(fiber.dispose())
    await ticks()
    assert not disposing.done()
    assert log == []
    gate.set()
    await disposing
    assert log == ["undone", "sync undo"]
    assert leftovers(root, [fiber]) == []


async def test_an_async_disposer_makes_the_effect_return_an_awaitable_and_delays_the_rest() -> None:
    """Once a disposer returns an awaitable, the earlier-registered ones run after it settles."""
    root = Context()
    gate = asyncio.Event()
    log: list[str] = []

    async def slow() -> None:
        await gate.wait()
        log.append("slow")

    def body() -> Generator[Disposer, None, None]:
        yield lambda: log.append("first")
        yield slow

    effect = root.effect(body)
    pending = effect()
    assert pending is not None
    await asyncio.sleep(0)
    assert log == []
    gate.set()
    await pending
    assert log == ["slow", "first"]


async def test_async_disposers_run_one_after_another() -> None:
    """Two async disposers in one effect: the second starts only after the first finished."""
    root = Context()
    log: list[str] = []

    async def undo(label: str) -> None:
        log.append(f"{label} start")
        await asyncio.sleep(0)
        log.append(f"{label} end")

    def body() -> Generator[Disposer, None, None]:
        yield lambda: undo("first")
        yield lambda: undo("second")

    pending = root.effect(body)()
    assert pending is not None
    await pending
    assert log == ["second start", "second end", "first start", "first end"]


async def test_a_failing_disposer_is_logged_and_the_others_still_run(caplog: pytest.LogCaptureFixture) -> None:
    """Sync and async disposer failures are logged under dsh.kernel, never raised."""
    root = Context()
    log: list[str] = []

    def broken() -> None:
        raise RuntimeError("sync undo failed")

    async def broken_async() -> None:
        raise RuntimeError("async undo failed")

    def body() -> Generator[Disposer, None, None]:
        yield lambda: log.append("first")
        yield broken_async
        yield broken

    with caplog.at_level(logging.ERROR, logger="dsh.kernel"):
        pending = root.effect(body, "fragile")()
        assert pending is not None
        await pending
    assert log == ["first"]
    messages = [record.getMessage() for record in caplog.records]
    assert any("fragile" in text and "sync undo failed" in text for text in messages)
    assert any("fragile" in text and "async undo failed" in text for text in messages)


async def test_an_effect_body_must_return_a_disposer_a_generator_or_none() -> None:
    """Anything else is a TypeError that names what was expected."""
    root = Context()
    with pytest.raises(TypeError, match="expected a disposer, a generator or None"):
        root.effect(lambda: 42, "odd")  # type: ignore[arg-type,return-value]
    assert root.fiber.effect_count == 0


async def test_an_async_effect_body_is_refused_and_its_coroutine_closed() -> None:
    """A coroutine body cannot run synchronously: TypeError, and no never-awaited warning."""
    root = Context()
    ran: list[bool] = []

    async def body() -> None:
        ran.append(True)

    with pytest.raises(TypeError, match="must be synchronous"):
        root.effect(body)  # type: ignore[arg-type]
    assert ran == []
    assert root.fiber.effect_count == 0


async def test_cannot_create_effect_on_inactive_context() -> None:
    """After its fiber is disposed, a context refuses effects, listeners and plugins."""
    root = Context()
    fiber = await root.plugin(PluginSpec(name="gone", apply=lambda ctx, _config: None))
    ctx = fiber.ctx
    await fiber.dispose()
    with pytest.raises(KernelError, match=r"^cannot create effect on inactive context$"):
        ctx.effect(lambda: None)
    with pytest.raises(KernelError, match=r"^cannot create effect on inactive context$"):
        ctx.on(PING, lambda _text: None)
    with pytest.raises(KernelError, match=r"^cannot create effect on inactive context$"):
        ctx.plugin(PluginSpec(name="child", apply=lambda ctx, _config: None))
    assert leftovers(root, [fiber]) == []


async def test_detaching_an_effect_forgets_it_without_running_its_disposers() -> None:
    """detach() is for a target that went away by itself."""
    root = Context()
    log: list[str] = []
    effect = root.effect(lambda: lambda: log.append("undo"))
    effect.detach()
    assert effect.disposed
    assert effect() is None
    assert log == []
    assert root.fiber.effect_count == 0
