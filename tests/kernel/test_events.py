"""Event dispatch modes (SPEC §1.4): emit, parallel, serial, bail, waterfall."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from dsh.kernel import (
    BailEvent,
    Context,
    EmitEvent,
    ParallelEvent,
    PluginSpec,
    SerialEvent,
    WaterfallEvent,
)
from dsh.kernel.current import current_context
from tests.kernel.helpers import PING, leftovers, ticks

FANOUT: ParallelEvent[[list[str]]] = ParallelEvent("test/fanout")
ASK: SerialEvent[[str]] = SerialEvent("test/ask")
VETO: BailEvent[[str]] = BailEvent("test/veto")
WRAP: WaterfallEvent[[list[str]], str] = WaterfallEvent("test/wrap")
AWRAP: WaterfallEvent[[list[str]], Awaitable[str]] = WaterfallEvent("test/async-wrap")


async def plugin_ctx(root: Context, name: str) -> Context:
    fiber = await root.plugin(PluginSpec(name=name, apply=lambda ctx, _config: None))
    return fiber.ctx


# ---------------------------------------------------------------------------- emit
async def test_emit_calls_listeners_in_registration_order_with_the_arguments() -> None:
    """emit is synchronous: every listener has run when it returns."""
    root = Context()
    seen: list[str] = []
    root.on(PING, lambda text: seen.append(f"a:{text}"))
    root.on(PING, lambda text: seen.append(f"b:{text}"))
    root.emit(PING, "hi")
    assert seen == ["a:hi", "b:hi"]


async def test_emit_without_listeners_does_nothing() -> None:
    """An event nobody listens to is a no-op in every mode."""
    root = Context()
    root.emit(PING, "nobody")
    await root.parallel(FANOUT, [])
    assert await root.serial(ASK, "q") is None
    assert root.bail(VETO, "q") is None
    assert root.waterfall(WRAP, [], inner=lambda: "inner") == "inner"


async def test_emit_propagates_the_first_listener_exception_and_skips_later_listeners() -> None:
    """The emitter sees the error; listeners after the thrower never run."""
    root = Context()
    seen: list[str] = []

    def thrower(_text: str) -> None:
        raise ValueError("listener failed")

    root.on(PING, lambda text: seen.append("before"))
    root.on(PING, thrower)
    root.on(PING, lambda text: seen.append("after"))
    with pytest.raises(ValueError, match="listener failed"):
        root.emit(PING, "x")
    assert seen == ["before"]


async def test_an_async_emit_listener_runs_as_a_task_of_its_plugin() -> None:
    """emit does not await it, but its body runs, and it ends with the listener's fiber."""
    root = Context()
    fiber = await root.plugin(PluginSpec(name="listener", apply=lambda ctx, _config: None))
    started = asyncio.Event()
    finished: list[str] = []

    async def listener(text: str) -> None:
        started.set()
        await asyncio.Event().wait()
        finished.append(text)

    fiber.ctx.on(PING, listener)
    root.emit(PING, "go")
    assert fiber.task_count == 1
    await started.wait()
    await fiber.dispose()
    assert fiber.task_count == 0
    assert finished == []
    assert leftovers(root, [fiber]) == []


async def test_a_failing_async_emit_listener_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Nobody awaits an emit listener's coroutine, so its failure is logged under dsh.kernel."""
    root = Context()
    done = asyncio.Event()

    async def listener(_text: str) -> None:
        done.set()
        raise RuntimeError("async listener failed")

    root.on(PING, listener)
    with caplog.at_level(logging.ERROR, logger="dsh.kernel"):
        root.emit(PING, "x")
        await done.wait()
        await ticks()
    assert any("async listener failed" in record.getMessage() for record in caplog.records)
    assert root.fiber.task_count == 0


async def test_prepend_puts_a_listener_before_those_already_registered() -> None:
    """prepend=True inserts at the front; later prepends go further in front."""
    root = Context()
    seen: list[str] = []
    root.on(PING, lambda _t: seen.append("plain"))
    root.on(PING, lambda _t: seen.append("first"), prepend=True)
    root.on(PING, lambda _t: seen.append("very first"), prepend=True)
    root.on(PING, lambda _t: seen.append("last"))
    root.emit(PING, "x")
    assert seen == ["very first", "first", "plain", "last"]


async def test_a_listener_that_removes_itself_during_dispatch_does_not_change_who_is_called() -> None:
    """Dispatch works on a snapshot: self-removal takes effect from the next dispatch."""
    root = Context()
    seen: list[str] = []
    effects: dict[str, Any] = {}

    def once(_text: str) -> None:
        seen.append("once")
        effects["once"]()

    def remove_next(_text: str) -> None:
        seen.append("remover")
        effects["victim"]()

    effects["once"] = root.on(PING, once)
    root.on(PING, remove_next)
    effects["victim"] = root.on(PING, lambda _t: seen.append("victim"))
    root.emit(PING, "1")
    assert seen == ["once", "remover", "victim"]
    seen.clear()
    root.emit(PING, "2")
    assert seen == ["remover"]


async def test_a_listener_added_during_dispatch_is_called_from_the_next_dispatch() -> None:
    """A listener registered mid-dispatch is not part of the running snapshot."""
    root = Context()
    seen: list[str] = []

    def adder(text: str) -> None:
        seen.append(f"adder:{text}")
        root.on(PING, lambda t: seen.append(f"added:{t}"))

    root.on(PING, adder)
    root.emit(PING, "1")
    assert seen == ["adder:1"]
    root.emit(PING, "2")
    assert seen == ["adder:1", "adder:2", "added:2"]


async def test_disposing_a_plugin_removes_every_listener_it_registered() -> None:
    """The unload test for listeners: dispose the owner, nothing is left."""
    root = Context()
    ctx = await plugin_ctx(root, "listener")
    ctx.on(PING, lambda _t: None)
    ctx.on(FANOUT, lambda _l: None)
    ctx.on(WRAP, lambda _l, next_: next_())
    assert root.listener_count(PING) == 1
    await ctx.fiber.dispose()
    assert root.listener_count(PING) == 0
    assert root.listener_count(FANOUT) == 0
    assert root.listener_count(WRAP) == 0
    assert leftovers(root, [ctx.fiber]) == []


async def test_a_listener_runs_on_behalf_of_the_context_that_registered_it() -> None:
    """While a listener runs, the current caller is its own context, not the emitter's."""
    root = Context()
    ctx = await plugin_ctx(root, "listener")
    seen: list[object] = []
    ctx.on(PING, lambda _t: seen.append(current_context.get()))
    root.emit(PING, "x")
    assert seen == [ctx]
    assert current_context.get() is None


# ------------------------------------------------------------------------ parallel
async def test_parallel_starts_every_listener_before_awaiting_any() -> None:
    """The first listener waits for something only the second one does: no deadlock."""
    root = Context()
    second_ran = asyncio.Event()
    log: list[str] = []

    async def first(items: list[str]) -> None:
        await second_ran.wait()
        items.append("first")

    async def second(items: list[str]) -> None:
        second_ran.set()
        items.append("second")

    root.on(FANOUT, first)
    root.on(FANOUT, second)
    await root.parallel(FANOUT, log)
    assert log == ["second", "first"]


async def test_parallel_with_only_sync_listeners_returns_once_they_ran() -> None:
    """Nothing to await: the dispatch completes after the calls."""
    root = Context()
    log: list[str] = []
    root.on(FANOUT, lambda items: items.append("one"))
    root.on(FANOUT, lambda items: items.append("two"))
    await root.parallel(FANOUT, log)
    assert log == ["one", "two"]


async def test_event_descriptors_carry_their_name_mode_and_doc() -> None:
    """Descriptors are declared once per domain, with a contract docstring."""
    event: EmitEvent[[str]] = EmitEvent("demo/said", "payload: the text; listeners must not block")
    assert (event.name, event.mode, event.doc) == ("demo/said", "emit", "payload: the text; listeners must not block")
    assert repr(event) == "EmitEvent('demo/said')"
    assert [kind.mode for kind in (ParallelEvent, SerialEvent, BailEvent, WaterfallEvent)] == [
        "parallel",
        "serial",
        "bail",
        "waterfall",
    ]


async def test_parallel_accepts_sync_listeners_and_plain_awaitables() -> None:
    """A non-awaitable return counts as done; a returned future is awaited."""
    root = Context()
    log: list[str] = []
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def sync(items: list[str]) -> None:
        items.append("sync")

    def returns_future(items: list[str]) -> asyncio.Future[None]:
        items.append("future")
        asyncio.get_running_loop().call_soon(future.set_result, None)
        return future

    root.on(FANOUT, sync)
    root.on(FANOUT, returns_future)
    await root.parallel(FANOUT, log)
    assert log == ["sync", "future"]
    assert future.done()


async def test_parallel_raises_the_first_failure() -> None:
    """Promise.all semantics: a rejection rejects the dispatch."""
    root = Context()
    release = asyncio.Event()

    async def fails(_items: list[str]) -> None:
        raise ValueError("parallel listener failed")

    async def slow(_items: list[str]) -> None:
        await release.wait()

    async def also_fails(_items: list[str]) -> None:
        await asyncio.sleep(0)
        raise KeyError("dropped")

    root.on(FANOUT, slow)
    root.on(FANOUT, fails)
    root.on(FANOUT, also_fails)
    with pytest.raises(ValueError, match="parallel listener failed"):
        await root.parallel(FANOUT, [])
    release.set()
    await ticks()
    assert root.fiber.task_count == 0


async def test_parallel_a_synchronous_raise_stops_later_listeners_from_starting() -> None:
    """Listeners before the thrower are started; those after it are not."""
    root = Context()
    log: list[str] = []

    async def early(items: list[str]) -> None:
        items.append("early")

    def thrower(_items: list[str]) -> None:
        raise RuntimeError("sync failure")

    async def late(items: list[str]) -> None:
        items.append("late")

    root.on(FANOUT, early)
    root.on(FANOUT, thrower)
    root.on(FANOUT, late)
    with pytest.raises(RuntimeError, match="sync failure"):
        await root.parallel(FANOUT, log)
    await ticks()
    assert log == ["early"]


async def test_parallel_counts_a_listener_cancelled_by_its_plugin_disposal_as_done() -> None:
    """The dispatcher does not receive a CancelledError it did not ask for."""
    root = Context()
    ctx = await plugin_ctx(root, "doomed")
    started = asyncio.Event()

    async def hangs(_items: list[str]) -> None:
        started.set()
        await asyncio.Event().wait()

    ctx.on(FANOUT, hangs)
    dispatch = asyncio.ensure_future(root.parallel(FANOUT, []))
    await started.wait()
    await ctx.fiber.dispose()
    await dispatch
    assert dispatch.result() is None


async def test_a_parallel_listener_runs_on_behalf_of_its_context() -> None:
    """Async listener bodies see their own context as the current caller."""
    root = Context()
    ctx = await plugin_ctx(root, "listener")
    seen: list[object] = []

    async def listener(_items: list[str]) -> None:
        await asyncio.sleep(0)
        seen.append(current_context.get())

    ctx.on(FANOUT, listener)
    await root.parallel(FANOUT, [])
    assert seen == [ctx]


# ------------------------------------------------------------------- serial / bail
async def test_serial_awaits_listeners_in_order_and_stops_at_the_first_bailing_value() -> None:
    """None and False continue; any other value is returned and later listeners are skipped."""
    root = Context()
    log: list[str] = []

    async def declines(question: str) -> bool:
        log.append("declines")
        return False

    def passes(question: str) -> None:
        log.append("passes")

    async def answers(question: str) -> str:
        log.append("answers")
        return f"answer to {question}"

    def never(question: str) -> str:
        log.append("never")
        return "late"

    for listener in (declines, passes, answers, never):
        root.on(ASK, listener)
    assert await root.serial(ASK, "q") == "answer to q"
    assert log == ["declines", "passes", "answers"]


async def test_serial_returns_none_when_no_listener_bails() -> None:
    """Every listener ran, none returned a value."""
    root = Context()
    log: list[str] = []
    root.on(ASK, lambda q: log.append(q))
    root.on(ASK, lambda q: False)
    assert await root.serial(ASK, "q") is None
    assert log == ["q"]


async def test_a_serial_async_listener_runs_on_behalf_of_its_context() -> None:
    """The awaited body of a serial listener sees its own context as the caller."""
    root = Context()
    ctx = await plugin_ctx(root, "listener")

    async def listener(_q: str) -> object:
        await asyncio.sleep(0)
        return current_context.get()

    ctx.on(ASK, listener)
    assert await root.serial(ASK, "q") is ctx


async def test_bail_returns_the_first_value_that_is_not_none_or_false() -> None:
    """bail is the synchronous serial."""
    root = Context()
    log: list[str] = []
    root.on(VETO, lambda q: log.append("none"))
    root.on(VETO, lambda q: False)
    root.on(VETO, lambda q: f"vetoed {q}")
    root.on(VETO, lambda q: "never")
    assert root.bail(VETO, "x") == "vetoed x"
    assert log == ["none"]
    root2 = Context()
    root2.on(VETO, lambda q: None)
    assert root2.bail(VETO, "x") is None


# ----------------------------------------------------------------------- waterfall
async def test_waterfall_runs_listeners_in_order_around_inner() -> None:
    """Each listener gets (*args, next); next() returns what the rest of the chain returns."""
    root = Context()
    trace: list[str] = []

    def outer(items: list[str], next_: Callable[[], str]) -> str:
        items.append("outer in")
        result = next_()
        items.append("outer out")
        return f"outer({result})"

    def middle(items: list[str], next_: Callable[[], str]) -> str:
        items.append("middle")
        return f"middle({next_()})"

    def inner() -> str:
        trace.append("inner")
        return "core"

    root.on(WRAP, middle)
    root.on(WRAP, outer, prepend=True)
    assert root.waterfall(WRAP, trace, inner=inner) == "outer(middle(core))"
    assert trace == ["outer in", "middle", "inner", "outer out"]


async def test_a_waterfall_listener_that_does_not_call_next_short_circuits() -> None:
    """Neither later listeners nor inner run; the listener's value is the result."""
    root = Context()
    trace: list[str] = []

    def veto(items: list[str], next_: Callable[[], str]) -> str:
        items.append("veto")
        return "replaced"

    def later(items: list[str], next_: Callable[[], str]) -> str:
        items.append("later")
        return next_()

    def inner() -> str:
        trace.append("inner")
        return "core"

    root.on(WRAP, veto)
    root.on(WRAP, later)
    assert root.waterfall(WRAP, trace, inner=inner) == "replaced"
    assert trace == ["veto"]


async def test_waterfall_listeners_share_the_mutable_argument() -> None:
    """The cooperative style: mutate the argument, then call next()."""
    root = Context()

    def tag(items: list[str], next_: Callable[[], str]) -> str:
        items.append("tagged")
        return next_()

    payload: list[str] = []
    root.on(WRAP, tag)
    assert root.waterfall(WRAP, payload, inner=lambda: ",".join(payload)) == "tagged"


async def test_an_async_waterfall_listener_awaits_next_and_runs_on_behalf_of_its_context() -> None:
    """next() returns the next awaitable; an async listener's body sees its own context."""
    root = Context()
    ctx = await plugin_ctx(root, "middleware")
    seen: list[object] = []

    async def listener(items: list[str], next_: Callable[[], Awaitable[str]]) -> str:
        seen.append(current_context.get())
        await asyncio.sleep(0)
        result = await next_()
        seen.append(current_context.get())
        return result.upper()

    async def inner() -> str:
        seen.append(current_context.get())
        return "done"

    ctx.on(AWRAP, listener)
    assert await root.waterfall(AWRAP, [], inner=inner) == "DONE"
    assert seen == [ctx, ctx, ctx]
