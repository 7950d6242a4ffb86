"""dsh.testing.scripted (the scripted model) and dsh.testing.harness (the full-stack fixture)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dsh.core.errors import HarnessError, LlmError
from dsh.core.llm import (
    BlockStartChunk,
    ErrorFinish,
    FinishChunk,
    GenerateOptions,
    StopFinish,
    TextDeltaChunk,
    to_json,
)
from dsh.kernel import AbortController
from dsh.testing.harness import Harness
from dsh.testing.scripted import HANG, Fail, ScriptedModel, error_finish, text_response


async def drain(model: ScriptedModel, options: GenerateOptions) -> list[Any]:
    return [chunk async for chunk in model.stream(options)]


def request(signal: Any = None) -> GenerateOptions:
    return GenerateOptions(model="m", messages=[], signal=signal)


async def test_script_bookkeeping_push_remaining_and_consumption() -> None:
    model = ScriptedModel([text_response("a")])
    model.push(text_response("b"))
    assert model.remaining == 2
    with pytest.raises(AssertionError, match="2 script entries were never consumed"):
        model.assert_consumed()
    await drain(model, request())
    await drain(model, request())
    model.assert_consumed()
    assert len(model.requests) == 2
    with pytest.raises(LlmError, match="script exhausted"):
        await drain(model, request())


async def test_callable_entries_see_the_request_and_fail_entries_raise_after_their_chunks() -> None:
    model = ScriptedModel(
        [lambda options: text_response(options.model), Fail(HarnessError("bad", "X"), error_finish("e"))]
    )
    chunks = await drain(model, request())
    assert chunks[1] == TextDeltaChunk(index=0, text="m")
    seen: list[Any] = []
    with pytest.raises(HarnessError, match="bad"):
        async for chunk in model.stream(request()):
            seen.append(chunk)
    assert seen == error_finish("e")


async def test_an_unknown_string_entry_is_refused() -> None:
    model = ScriptedModel(["bogus"])
    with pytest.raises(HarnessError, match="unknown script entry 'bogus'"):
        await drain(model, request())


async def test_an_aborted_signal_stops_a_chunk_list() -> None:
    controller = AbortController()
    controller.abort("stop")
    model = ScriptedModel([text_response("abc")], pace=0.0)
    with pytest.raises(HarnessError, match="stop"):
        await drain(model, request(controller.signal))


async def test_a_hang_without_a_signal_waits_until_cancelled() -> None:
    model = ScriptedModel([HANG])
    stream = model.stream(request())
    got = [await stream.__anext__(), await stream.__anext__()]
    assert got == [BlockStartChunk(index=0, block_type="text"), TextDeltaChunk(index=0, text="partial")]
    waiting = asyncio.ensure_future(stream.__anext__())
    await asyncio.sleep(0)
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_the_harness_fails_when_a_task_outlives_disposal() -> None:
    never = asyncio.Event()
    with pytest.raises(AssertionError, match="tasks left running after dispose"):
        async with Harness():
            stray = asyncio.ensure_future(never.wait())
    stray.cancel()


async def test_the_harness_can_run_without_the_invariants_plugin() -> None:
    async with Harness(invariants_plugin=False) as h:
        assert h.ctx.runtime.services.get("sessions") is not None
        assert all(f.name != "invariants" for f in h.ctx.fiber.children)


async def test_a_hang_ends_with_an_aborted_error_when_its_signal_fires() -> None:
    controller = AbortController()
    model = ScriptedModel([HANG])
    stream = model.stream(request(controller.signal))
    await stream.__anext__()
    await stream.__anext__()
    waiting = asyncio.ensure_future(stream.__anext__())
    await asyncio.sleep(0)
    controller.abort("enough")
    with pytest.raises(HarnessError, match="aborted"):
        await waiting


async def test_json_shaped_chunks_are_converted_once_into_typed_chunks() -> None:
    """A script may spell chunks as their JSON; the model streams the typed values."""
    delta = {"type": "text-delta", "index": 0, "text": "hi"}
    finish = {"type": "finish", "reason": {"kind": "stop"}}
    model = ScriptedModel([[delta, finish]])
    model.push([TextDeltaChunk(index=0, text="typed"), finish])
    model.push(lambda _options: [delta])
    model.push(Fail(LlmError("gone", "SERVER"), [finish]))
    assert await drain(model, request()) == [TextDeltaChunk(index=0, text="hi"), FinishChunk(reason=StopFinish())]
    assert await drain(model, request()) == [TextDeltaChunk(index=0, text="typed"), FinishChunk(reason=StopFinish())]
    assert await drain(model, request()) == [TextDeltaChunk(index=0, text="hi")]
    seen: list[Any] = []
    with pytest.raises(LlmError, match="gone"):
        async for chunk in model.stream(request()):
            seen.append(chunk)
    assert seen == [FinishChunk(reason=StopFinish())]
    assert to_json(error_finish("bad", "X")) == [
        {"type": "finish", "reason": {"kind": "error", "message": "bad", "code": "X"}}
    ]
    assert error_finish("bad") == [FinishChunk(reason=ErrorFinish(message="bad"))]


def test_a_malformed_json_chunk_is_refused_when_the_entry_is_added() -> None:
    with pytest.raises(HarnessError, match="malformed stream chunk") as caught:
        ScriptedModel([[{"type": "text-delta", "index": 0}]])
    assert caught.value.code == "MALFORMED"
    model = ScriptedModel()
    with pytest.raises(HarnessError, match="malformed stream chunk"):
        model.push([{"type": "no-such-chunk"}])
    assert model.remaining == 0
