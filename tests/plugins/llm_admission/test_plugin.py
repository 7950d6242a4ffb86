"""llm-admission on the real ``llm`` service: the config, the opening and stream limits, aborts, closes, unloading.

Only the model (:class:`~tests.plugins.llm_admission.helpers.GatedModel`, released by
hand) and the hold clock (:class:`~tests.plugins.llm_admission.helpers.FakeTimer`,
fired by hand) are fake.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import ValidationError

from dsh.core.errors import LlmError
from dsh.core.llm import LLM, LLM_STREAM, GenerateOptions, LlmAdapter, StreamChunk, TextDeltaChunk
from dsh.kernel import AbortController, AbortError, AbortSignal, ConfigError, Context, aborted_signal, load_tree
from dsh.plugins import llm_admission
from dsh.plugins.llm_admission import (
    DEFAULT_HOLD_MS,
    DEFAULT_MAX_OPENING,
    Admission,
    AdmittedStream,
    Config,
    admission_plugin,
    install_admission,
)
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response
from tests.plugins.llm_admission.helpers import (
    GATED,
    FakeTimer,
    GatedModel,
    ask,
    collect,
    has_started,
    texts,
    ticks,
    until,
)


@dataclass
class Rig:
    """The ``llm`` service with :class:`GatedModel` as :data:`GATED`, behind the plugin's limits."""

    ctx: Context
    model: GatedModel
    timer: FakeTimer
    admission: Admission

    def stream(self, prompt: str, signal: AbortSignal | None = None) -> AdmittedStream:
        options = ask(prompt)
        options.signal = signal
        stream = self.ctx[LLM].stream(options)
        assert isinstance(stream, AdmittedStream)  # what the plugin's listener answered
        return stream

    def start(self, prompt: str, signal: AbortSignal | None = None) -> asyncio.Task[list[StreamChunk]]:
        """A task draining a new stream for ``prompt``."""
        return asyncio.create_task(collect(self.stream(prompt, signal)))

    def prompts(self) -> list[str]:
        """The prompts the model was called with, in call order."""
        return [call.prompt for call in self.model.calls]

    def counts(self) -> tuple[int, ...]:
        """``opening.held, opening.waiting`` (and ``streams.held, streams.waiting`` when capped)."""
        opening, streams = self.admission.opening, self.admission.streams
        found = (opening.held, opening.waiting)
        return found if streams is None else (*found, streams.held, streams.waiting)


@asynccontextmanager
async def rig(*, rest: bool = True, **config: Any) -> AsyncIterator[Rig]:
    """A :class:`Rig` whose config is ``config`` (camelCase keys); on exit every count must be back to zero."""
    timer = FakeTimer()
    model = GatedModel(rest=rest)
    async with Harness(with_loop=False, invariants_plugin=False) as harness:
        harness.llm.register_adapter([GATED], model)
        admission = install_admission(harness.ctx, Config.model_validate(config), timer)
        setup = Rig(harness.ctx, model, timer, admission)
        yield setup
        assert not any(setup.counts()), f"slots still held or waited for: {setup.counts()}"


def reply(prompt: str) -> str:
    return f"reply to {prompt}"


# ---------------------------------------------------------------------------- config
def test_the_defaults_are_eight_opening_a_quarter_second_hold_and_no_stream_cap() -> None:
    config = Config()
    assert (config.max_opening, config.hold_ms, config.max_streams) == (8, 250, None)
    assert (DEFAULT_MAX_OPENING, DEFAULT_HOLD_MS) == (8, 250)
    admission = Admission(config, FakeTimer())
    assert (admission.opening.size, admission.hold, admission.streams) == (8, 0.25, None)


@pytest.mark.parametrize(
    "raw",
    [
        {"maxOpening": 2, "holdMs": 40, "maxStreams": 5},
        {"max_opening": 2, "hold_ms": 40, "max_streams": 5},
        {"maxOpening": 2, "hold_ms": 40, "maxStreams": 5},
    ],
)
def test_config_keys_are_camel_case_and_snake_case_is_accepted_too(raw: dict[str, int]) -> None:
    config = Config.model_validate(raw)
    assert (config.max_opening, config.hold_ms, config.max_streams) == (2, 40, 5)
    admission = Admission(config, FakeTimer())
    assert admission.streams is not None
    assert (admission.opening.size, admission.hold, admission.streams.size) == (2, 0.04, 5)


def test_the_config_is_frozen() -> None:
    config = Config(max_opening=3)
    with pytest.raises(ValidationError, match="frozen"):
        config.max_opening = 4  # type: ignore[misc]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"maxOpening": 0}, "maxOpening: Input should be greater than 0"),
        ({"max_opening": -1}, "max_opening: Input should be greater than 0"),
        ({"holdMs": 0}, "holdMs: Input should be greater than 0"),
        ({"holdMs": -250}, "holdMs: Input should be greater than 0"),
        ({"maxStreams": 0}, "maxStreams: Input should be greater than 0"),
        ({"maxOpenings": 3}, "maxOpenings: Extra inputs are not permitted"),
        ({"maxOpening": "many"}, "maxOpening: Input should be a valid integer"),
    ],
)
async def test_zero_negative_and_unknown_keys_are_refused_naming_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message.split(": ", 1)[1]):
        Config.model_validate(raw)
    root = Context()
    with pytest.raises(ConfigError, match=f'plugin "llm-admission": invalid config: {message}'):
        await root.plugin(admission_plugin(FakeTimer()), raw)
    assert root.listener_count(LLM_STREAM) == 0
    await root.dispose()


async def test_a_tree_entry_named_llm_admission_runs_streams_on_the_event_loop_clock(tmp_path: Path) -> None:
    tree = tmp_path / "tree.yml"
    tree.write_text("- {id: llm, name: llm}\n- {id: admission, name: llm-admission, config: {maxOpening: 1}}\n")
    root = Context()
    await load_tree(root, tree)
    model = GatedModel()
    model.answer_all()
    root[LLM].register_adapter([GATED], model)
    assert root.listener_count(LLM_STREAM) == 1
    stream = root[LLM].stream(ask("tree"))
    assert type(stream) is AdmittedStream
    assert texts(await collect(stream)) == reply("tree")
    await root.dispose()
    assert root.listener_count(LLM_STREAM) == 0


def test_the_module_is_the_plugin_entry() -> None:
    assert (llm_admission.name, llm_admission.inject) == ("llm-admission", ["llm"])
    spec = admission_plugin()
    assert (spec.name, spec.Config, list(spec.inject)) == ("llm-admission", Config, ["llm"])


async def test_without_a_timer_of_its_own_holdms_passes_on_the_event_loop_clock() -> None:
    model = GatedModel()
    async with Harness(with_loop=False, invariants_plugin=False) as harness:
        harness.llm.register_adapter([GATED], model)
        admission = install_admission(harness.ctx, Config(holdMs=1, maxOpening=1))  # the loop's call_later
        slow = asyncio.create_task(collect(harness.ctx[LLM].stream(ask("slow"))))
        nxt = asyncio.create_task(collect(harness.ctx[LLM].stream(ask("next"))))
        async with asyncio.timeout(10):
            while len(model.calls) < 2:  # the 1 ms hold ran out while "slow" still waits for its answer
                await asyncio.sleep(0.001)
        assert [call.prompt for call in model.calls] == ["slow", "next"]
        model.answer_all()
        assert texts(await slow) == reply("slow")
        assert texts(await nxt) == reply("next")
        assert (admission.opening.held, admission.opening.waiting) == (0, 0)


# ------------------------------------------------------------------------ opening
async def test_at_most_max_opening_streams_open_at_once_and_the_rest_are_admitted_in_arrival_order() -> None:
    async with rig(maxOpening=3) as r:
        prompts = [f"p{index}" for index in range(10)]
        tasks = [r.start(prompt) for prompt in prompts]
        await until(has_started(r.model, 3))
        await ticks()
        assert len(r.model.calls) == 3  # the others never reached the model
        assert r.counts() == (3, 7)
        for index in range(10):
            assert r.model.opening <= 3
            await until(has_started(r.model, min(index + 3, 10)))
            r.model.calls[index].answer.set()
        results = await asyncio.gather(*tasks)
        assert [texts(chunks) for chunks in results] == [reply(prompt) for prompt in prompts]
        assert r.prompts() == prompts  # first come, first served: nobody overtook
        assert r.model.max_opening == 3
        assert r.counts() == (0, 0)


async def test_the_slot_passes_on_at_the_first_chunk_while_that_stream_still_streams() -> None:
    async with rig(rest=False, maxOpening=1) as r:
        first = r.stream("first")
        r.model.answer_all()
        chunk = await first.__anext__()
        assert chunk == text_response(reply("first"))[0]
        second = r.start("second")
        await until(has_started(r.model, 2))
        assert r.prompts() == ["first", "second"]  # admitted while "first" still streams
        r.model.calls[1].rest.set()
        assert texts(await second) == reply("second")
        r.model.calls[0].rest.set()
        assert texts([chunk, *await collect(first)]) == reply("first")
        assert r.counts() == (0, 0)


async def test_the_hold_timer_is_set_for_hold_ms_and_cancelled_at_the_first_chunk() -> None:
    async with rig(maxOpening=1, holdMs=400) as r:
        task = r.start("one")
        await until(has_started(r.model, 1))
        (alarm,) = r.timer.alarms
        assert alarm.seconds == 0.4
        assert r.timer.pending == [alarm]
        r.model.calls[0].answer.set()
        assert texts(await task) == reply("one")
        assert alarm.cancelled
        assert not alarm.fired
        assert r.timer.pending == []


async def test_after_hold_ms_the_slot_passes_on_while_the_first_still_waits_and_both_complete() -> None:
    async with rig(maxOpening=1, holdMs=500) as r:
        slow = r.start("slow")
        quick = r.start("quick")
        await until(lambda: r.counts() == (1, 1))
        assert r.prompts() == ["slow"]
        r.timer.alarms[0].fire()  # "slow" has had its 500 ms: its slot passes on
        await until(has_started(r.model, 2))
        assert r.counts() == (1, 0)  # held by "quick"; "slow" holds none while it waits
        assert not r.model.calls[0].answered
        r.model.calls[1].answer.set()
        assert texts(await quick) == reply("quick")
        assert r.counts() == (0, 0)
        assert not slow.done()
        r.model.calls[0].answer.set()
        assert texts(await slow) == reply("slow")
        assert r.counts() == (0, 0)
        slow_alarm, quick_alarm = r.timer.alarms
        assert slow_alarm.fired
        assert quick_alarm.cancelled
        assert not quick_alarm.fired


async def test_a_stream_failing_before_its_first_chunk_gives_its_slot_to_the_next() -> None:
    async with rig(maxOpening=1) as r:
        failing = r.start("failing")
        nxt = r.start("next")
        await until(lambda: r.counts() == (1, 1))
        r.model.calls[0].fail(LlmError("overloaded", "SERVER", 503))
        with pytest.raises(LlmError, match="overloaded") as caught:
            await failing
        assert caught.value.code == "SERVER"
        assert r.timer.alarms[0].cancelled
        await until(has_started(r.model, 2))
        r.model.calls[1].answer.set()
        assert texts(await nxt) == reply("next")
        assert r.prompts() == ["failing", "next"]


async def test_an_unknown_model_gives_the_slot_back_and_its_error_surfaces_on_iteration() -> None:
    async with rig(maxOpening=1) as r:
        first = r.start("first")
        await until(lambda: r.counts() == (1, 0))
        unknown = r.ctx[LLM].stream(ask("lost", model="nobody"))  # the lookup waits for the admission
        failure = asyncio.ensure_future(unknown.__anext__())
        nxt = r.start("next")
        await until(lambda: r.counts() == (1, 2))
        r.model.calls[0].answer.set()
        with pytest.raises(LlmError, match='no adapter registered for model "nobody"') as caught:
            await failure
        assert caught.value.code == "NO_ADAPTER"
        await until(has_started(r.model, 2))  # the slot went on to "next"
        with pytest.raises(StopAsyncIteration):
            await unknown.__anext__()  # the failed stream is over
        r.model.calls[1].answer.set()
        assert [texts(await first), texts(await nxt)] == [reply("first"), reply("next")]
        assert r.prompts() == ["first", "next"]
        assert r.counts() == (0, 0)


# ------------------------------------------------------------------ aborts, cancels
async def test_an_abort_while_waiting_raises_its_reason_holding_nothing_and_the_next_gets_the_slot() -> None:
    async with rig(maxOpening=1) as r:
        first = r.start("first")
        controller = AbortController()
        aborted = r.start("aborted", controller.signal)
        nxt = r.start("next")
        await until(lambda: r.counts() == (1, 2))
        controller.abort("user stop")
        with pytest.raises(AbortError, match="user stop") as caught:
            await aborted
        assert caught.value.reason == "user stop"
        assert r.counts() == (1, 1)
        r.model.answer_all()
        assert [texts(await first), texts(await nxt)] == [reply("first"), reply("next")]
        assert r.prompts() == ["first", "next"]  # the aborted request never reached the model


async def test_an_already_aborted_signal_raises_at_once_without_touching_the_model_or_the_clock() -> None:
    async with rig() as r:
        stream = r.stream("never", aborted_signal("gone"))
        with pytest.raises(AbortError, match="gone"):
            await stream.__anext__()
        assert (r.model.calls, r.timer.alarms, r.counts()) == ([], [], (0, 0))


async def test_cancelling_a_waiting_stream_holds_nothing_and_the_next_gets_the_slot() -> None:
    async with rig(maxOpening=1) as r:
        first = r.start("first")
        cancelled = r.start("cancelled")
        nxt = r.start("next")
        await until(lambda: r.counts() == (1, 2))
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert r.counts() == (1, 1)
        r.model.answer_all()
        assert [texts(await first), texts(await nxt)] == [reply("first"), reply("next")]
        assert r.prompts() == ["first", "next"]


async def test_a_stream_cancelled_just_after_its_slot_was_granted_passes_the_slot_on() -> None:
    async with rig(maxOpening=1) as r:
        first = r.start("first")
        cancelled = r.start("cancelled")
        nxt = r.start("next")
        await until(lambda: r.counts() == (1, 2))
        r.timer.alarms[0].fire()  # the slot is handed to "cancelled" ...
        cancelled.cancel()  # ... which is cancelled before it runs
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        await until(has_started(r.model, 2))
        assert r.prompts() == ["first", "next"]
        assert r.counts() == (1, 0)  # "next" holds it; "cancelled" holds nothing
        r.model.answer_all()
        assert [texts(await first), texts(await nxt)] == [reply("first"), reply("next")]


async def test_cancelling_a_stream_waiting_for_its_first_chunk_closes_the_model_call_and_frees_the_slot() -> None:
    async with rig(maxOpening=1) as r:
        cancelled = r.start("cancelled")
        nxt = r.start("next")
        await until(lambda: r.counts() == (1, 1) and len(r.model.started) == 1)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert r.model.calls[0].closed
        assert r.timer.alarms[0].cancelled
        await until(has_started(r.model, 2))
        r.model.answer_all()
        assert texts(await nxt) == reply("next")


# --------------------------------------------------------------------------- close
async def test_aclose_before_the_first_next_never_calls_the_model_and_iteration_then_stops() -> None:
    async with rig() as r:
        stream = r.stream("closed")
        await stream.aclose()
        assert await collect(stream) == []
        assert (r.model.calls, r.timer.alarms, r.counts()) == ([], [], (0, 0))


async def test_aclose_mid_stream_closes_the_model_stream_and_gives_the_stream_slot_to_the_next() -> None:
    async with rig(rest=False, maxStreams=1) as r:
        r.model.answer_all()
        stream = r.stream("closed")
        await stream.__anext__()
        nxt = r.start("next")
        await until(lambda: r.counts() == (0, 0, 1, 1))
        await stream.aclose()
        assert r.model.calls[0].closed
        assert await collect(stream) == []
        await until(has_started(r.model, 2))
        r.model.calls[1].rest.set()
        assert texts(await nxt) == reply("next")
        assert r.counts() == (0, 0, 0, 0)


async def test_a_stream_abandoned_mid_way_without_aclose_still_gives_its_stream_slot_to_the_next() -> None:
    async with rig(rest=False, maxStreams=1) as r:
        r.model.answer_all()
        abandoned = r.stream("abandoned")
        await abandoned.__anext__()
        nxt = r.start("next")
        await until(lambda: r.counts() == (0, 0, 1, 1))
        del abandoned  # the last reference: no aclose(), against the contract
        await until(has_started(r.model, 2))
        r.model.calls[1].rest.set()
        assert texts(await nxt) == reply("next")
        assert r.counts() == (0, 0, 0, 0)


class PlainStream:
    """An async iterator that is no generator (no ``aclose``): each next is a ready future."""

    def __init__(self, chunks: list[StreamChunk]) -> None:
        self.chunks = chunks
        self.nexts: list[asyncio.Future[StreamChunk]] = []

    def __aiter__(self) -> PlainStream:
        return self

    def __anext__(self) -> asyncio.Future[StreamChunk]:
        future: asyncio.Future[StreamChunk] = asyncio.get_running_loop().create_future()
        if self.chunks:
            future.set_result(self.chunks.pop(0))
        else:
            future.set_exception(StopAsyncIteration())
        self.nexts.append(future)
        return future


class PlainModel(LlmAdapter):
    def __init__(self) -> None:
        self.streams: list[PlainStream] = []

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        stream = PlainStream(text_response("abc"))
        self.streams.append(stream)
        return stream


async def test_after_the_first_chunk_each_next_is_handed_over_from_the_model_stream_as_it_is() -> None:
    async with rig(maxOpening=1) as r:
        plain = PlainModel()
        r.ctx[LLM].register_adapter(["plain"], plain)
        stream = r.ctx[LLM].stream(ask("x", model="plain"))
        assert isinstance(stream, AdmittedStream)
        first = await stream.__anext__()
        (inner,) = plain.streams
        assert first == text_response("abc")[0]
        assert r.counts() == (0, 0)
        pending = stream.__anext__()
        assert pending is inner.nexts[-1]  # no wrapper per chunk
        assert await pending == TextDeltaChunk(index=0, text="a")
        await stream.aclose()  # the model's stream has no aclose: nothing to call
        assert await collect(stream) == []


# ----------------------------------------------------------------------- maxStreams
async def test_with_max_streams_a_third_stream_waits_until_one_of_two_ends(
    ending: Literal["end", "failure", "aclose"],
) -> None:
    async with rig(rest=False, maxStreams=2) as r:
        r.model.answer_all()
        one, two = r.stream("one"), r.stream("two")
        firsts = [await one.__anext__(), await two.__anext__()]
        third = r.start("third")
        await until(lambda: r.counts() == (0, 0, 2, 1))
        await ticks()
        assert r.prompts() == ["one", "two"]
        if ending == "end":
            r.model.calls[0].rest.set()
            assert texts([firsts[0], *await collect(one)]) == reply("one")
        elif ending == "failure":
            r.model.calls[0].fail_rest(LlmError("cut", "STREAM_CLOSED"))
            with pytest.raises(LlmError, match="cut"):
                await collect(one)
        else:
            await one.aclose()
            assert r.model.calls[0].closed
        await until(has_started(r.model, 3))
        assert r.counts() == (0, 0, 2, 0)
        assert await collect(one) == []
        r.model.calls[1].rest.set()
        r.model.calls[2].rest.set()
        assert texts([firsts[1], *await collect(two)]) == reply("two")
        assert texts(await third) == reply("third")
        assert r.counts() == (0, 0, 0, 0)


@pytest.fixture(params=["end", "failure", "aclose"])
def ending(request: pytest.FixtureRequest) -> str:
    """How the first of the two streams ends."""
    value: str = request.param
    return value


async def test_an_abort_while_waiting_for_a_stream_slot_raises_holding_nothing() -> None:
    async with rig(maxStreams=1, rest=False) as r:
        r.model.answer_all()
        one = r.stream("one")
        first = await one.__anext__()
        controller = AbortController()
        aborted = r.start("aborted", controller.signal)
        await until(lambda: r.counts() == (0, 0, 1, 1))
        controller.abort("enough")
        with pytest.raises(AbortError, match="enough"):
            await aborted
        assert r.counts() == (0, 0, 1, 0)
        assert r.timer.alarms[1:] == []  # it never reached the opening limit
        r.model.calls[0].rest.set()
        assert texts([first, *await collect(one)]) == reply("one")


async def test_an_abort_while_waiting_to_open_gives_back_the_stream_slot_already_taken() -> None:
    async with rig(maxOpening=1, maxStreams=2) as r:
        opening = r.start("opening")
        controller = AbortController()
        aborted = r.start("aborted", controller.signal)
        await until(lambda: r.counts() == (1, 1, 2, 0))
        controller.abort("enough")
        with pytest.raises(AbortError, match="enough"):
            await aborted
        assert r.counts() == (1, 0, 1, 0)
        r.model.answer_all()
        assert texts(await opening) == reply("opening")
        assert r.prompts() == ["opening"]


# ------------------------------------------------------------------------- unloading
async def test_unloading_the_plugin_removes_its_listener_and_an_admitted_stream_keeps_going() -> None:
    timer = FakeTimer()
    model = GatedModel(rest=False)
    model.answer_all()
    async with Harness(with_loop=False, invariants_plugin=False) as harness:
        harness.llm.register_adapter([GATED], model)
        fiber = await harness.ctx.plugin(admission_plugin(timer), {"maxOpening": 1, "holdMs": 100})
        assert harness.ctx.listener_count(LLM_STREAM) == 1
        admitted = harness.llm.stream(ask("admitted"))
        assert type(admitted) is AdmittedStream
        first = await admitted.__anext__()
        assert [alarm.seconds for alarm in timer.alarms] == [0.1]
        await fiber.dispose()
        assert harness.ctx.listener_count(LLM_STREAM) == 0
        direct = harness.llm.stream(ask("direct"))
        assert type(direct) is not AdmittedStream  # straight to the model
        model.calls[0].rest.set()
        assert texts([first, *await collect(admitted)]) == reply("admitted")
        model.calls[1].rest.set()
        assert texts(await collect(direct)) == reply("direct")
        assert len(timer.alarms) == 1
