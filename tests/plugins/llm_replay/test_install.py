"""SPEC §12: install_llm_replay through the real LlmService waterfall."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from dsh.core.errors import HarnessError, LlmError
from dsh.core.llm import LLM_STREAM, ErrorFinish, LlmService, Message, StopFinish, StreamChunk, TokenUsage, text
from dsh.kernel import AbortController, Context, PluginSpec, aborted_signal
from dsh.plugins import llm_replay
from dsh.plugins.llm_replay import Config, install_llm_replay, play_entry
from tests.plugins.llm_replay.helpers import (
    RealModel,
    answer,
    collect,
    delta,
    drain,
    finish,
    options,
    recorded_call,
    start,
    write_json,
    write_log,
)

HANG_CHUNKS: list[StreamChunk] = [start(0, "text"), delta("partial")]


def log_config(tmp_path: Path, *calls: list[StreamChunk]) -> Config:
    """A fixture recording ``calls`` as consecutive steps of turn 1."""
    events: list[dict[str, Any]] = []
    for step, chunks in enumerate(calls, start=1):
        events.extend(recorded_call(1, step, chunks))
    return Config(file=str(write_log(tmp_path / "session.jsonl", events)))


def override_config(tmp_path: Path, entries: list[Any]) -> Config:
    sidecar = write_json(tmp_path / "replay.override.json", entries)
    return Config(file=str(tmp_path / "session.jsonl"), override_file=str(sidecar))


async def test_serves_derived_chunks_back_short_circuiting_the_adapter(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """serves derived chunks back, short-circuiting the adapter"""
    chunks = answer("recorded")
    install_llm_replay(root, log_config(tmp_path, chunks))
    assert llm.models() == []  # no adapter at all: the listener answers without next()
    assert await drain(llm) == chunks


async def test_serves_the_nth_call_the_nth_derived_entry_positional(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """serves the Nth call the Nth derived entry (positional)"""
    first, second, third = answer("one"), answer("two"), answer("three")
    install_llm_replay(root, log_config(tmp_path, first, second, third))
    streams = [llm.stream(options(model)) for model in ("model-b", "model-a", "model-b")]
    assert await collect(streams[2]) == third  # order of iteration does not matter: order of calls does
    assert await collect(streams[0]) == first
    assert await collect(streams[1]) == second


async def test_the_cursor_advances_when_the_call_is_made_not_when_iterated(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """Extra (SPEC §17.30): an abandoned, never-iterated call still consumes its entry."""
    first, second = answer("one"), answer("two")
    install_llm_replay(root, log_config(tmp_path, first, second))
    abandoned = llm.stream(options())
    assert await drain(llm) == second
    await abandoned.aclose()  # type: ignore[attr-defined]


async def test_generate_assembles_the_replayed_answer(root: Context, llm: LlmService, tmp_path: Path) -> None:
    """Extra: generate() drains the replayed stream like any adapter's."""
    install_llm_replay(root, log_config(tmp_path, answer("assembled")))
    result = await llm.generate(options())
    assert result.message == Message("assistant", (text("assembled"),))
    assert result.usage == TokenUsage(input_tokens=3, output_tokens=1)
    assert result.finish == StopFinish()


async def test_replays_a_sidecar_throw_entry_as_an_llm_error_with_code_status_after_its_prefix_chunks(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """replays a sidecar throw-entry as an LlmError with code/status, after its prefix chunks"""
    prefix = [start(), delta("half")]
    entries = [
        {"kind": "throw", "chunks": prefix, "message": "upstream down", "code": "SERVER", "status": 503},
        {"kind": "throw", "chunks": [], "message": "no status", "code": "STREAM_CLOSED"},
    ]
    install_llm_replay(root, override_config(tmp_path, entries))
    seen: list[StreamChunk] = []
    with pytest.raises(LlmError) as caught:
        async for chunk in llm.stream(options()):
            seen.append(chunk)
    assert seen == prefix
    assert (caught.value.message, caught.value.code, caught.value.status) == ("upstream down", "SERVER", 503)
    with pytest.raises(LlmError) as caught:
        await drain(llm)
    assert (caught.value.message, caught.value.code, caught.value.status) == ("no status", "STREAM_CLOSED", None)


async def test_replays_a_sidecar_hang_entry_that_surfaces_abort_when_the_signal_fires(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """replays a sidecar hang-entry that surfaces abort when the signal fires"""
    install_llm_replay(root, override_config(tmp_path, [{"kind": "hang"}]))
    controller = AbortController()
    seen: list[StreamChunk] = []
    both_seen = asyncio.Event()

    async def consume() -> None:
        async for chunk in llm.stream(options(signal=controller.signal)):
            seen.append(chunk)
            if len(seen) == 2:
                both_seen.set()

    task = asyncio.create_task(consume())
    await both_seen.wait()
    controller.abort("user cancelled")
    with pytest.raises(HarnessError) as caught:
        await task
    assert seen == HANG_CHUNKS
    assert (caught.value.message, caught.value.code) == ("aborted", "ABORTED")


async def test_fails_loud_when_the_script_is_exhausted(root: Context, llm: LlmService, tmp_path: Path) -> None:
    """fails loud when the script is exhausted"""
    only = answer("only")
    install_llm_replay(root, log_config(tmp_path, only))
    assert await drain(llm) == only
    extra = llm.stream(options())  # the call itself succeeds: the error comes with iteration
    with pytest.raises(HarnessError) as caught:
        await collect(extra)
    assert caught.value.message == (
        "llm-replay: script exhausted — requested model call #2 but the fixture has only 1; re-record the scenario"
    )
    assert caught.value.code == "REPLAY_EXHAUSTED"


async def test_an_empty_script_is_exhausted_at_the_first_call(root: Context, llm: LlmService, tmp_path: Path) -> None:
    """Extra: a log without model calls serves none (call #1 of 0)."""
    install_llm_replay(root, log_config(tmp_path))
    with pytest.raises(HarnessError, match=r"requested model call #1 but the fixture has only 0;"):
        await drain(llm)


async def test_aborts_mid_replay_when_the_signal_is_already_set(root: Context, llm: LlmService, tmp_path: Path) -> None:
    """aborts mid-replay when the signal is already set"""
    install_llm_replay(root, log_config(tmp_path, answer("never seen")))
    seen: list[StreamChunk] = []
    with pytest.raises(HarnessError) as caught:
        async for chunk in llm.stream(options(signal=aborted_signal("gone"))):
            seen.append(chunk)
    assert seen == []
    assert (caught.value.message, caught.value.code) == ("aborted", "ABORTED")


async def test_aborts_between_chunks_when_the_signal_fires_mid_replay(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """Extra: the signal is checked before every chunk, so an abort mid-stream stops the next one."""
    chunks = answer("abc")
    install_llm_replay(root, log_config(tmp_path, chunks))
    controller = AbortController()
    stream = llm.stream(options(signal=controller.signal))
    assert await anext(stream) == chunks[0]
    assert await anext(stream) == chunks[1]
    controller.abort()
    with pytest.raises(HarnessError, match=r"^aborted$"):
        await anext(stream)


async def test_removes_the_waterfall_listener_when_the_owning_fiber_is_disposed_hmr_safety(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """removes the waterfall listener when the owning fiber is disposed (HMR safety)"""
    real = RealModel(answer("live model"))
    llm.register_adapter(["deepseek-v4-flash"], real)
    config = log_config(tmp_path, answer("replayed"), answer("replayed again"))
    fiber = await root.plugin(llm_replay, {"file": config.file})
    assert root.listener_count(LLM_STREAM) == 1
    assert await drain(llm, options("deepseek-v4-flash")) == answer("replayed")
    assert real.calls == 0
    await fiber.dispose()
    assert root.listener_count(LLM_STREAM) == 0
    assert await drain(llm, options("deepseek-v4-flash")) == answer("live model")
    assert real.calls == 1


async def test_the_returned_effect_removes_the_listener(root: Context, llm: LlmService, tmp_path: Path) -> None:
    """Extra: install returns the listener's effect; calling it uninstalls the replay."""
    llm.register_adapter(["m"], RealModel(answer("live")))
    effect = install_llm_replay(root, log_config(tmp_path, answer("replayed")))
    assert root.listener_count(LLM_STREAM) == 1
    effect()
    assert effect.disposed
    assert root.listener_count(LLM_STREAM) == 0
    assert await drain(llm, options("m")) == answer("live")


async def test_a_failed_load_installs_nothing_and_the_plugin_can_load_again(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """Extra (rollback): a fixture that fails to load leaves no listener behind; a fixed one then loads."""
    config = log_config(tmp_path, [start()])  # a call without finish: derivation fails
    with pytest.raises(HarnessError, match="ended without a finish chunk"):
        await root.plugin(llm_replay, {"file": config.file})
    assert root.listener_count(LLM_STREAM) == 0
    with pytest.raises(HarnessError, match="fixture not found"):
        install_llm_replay(root, Config(file=str(tmp_path / "absent.jsonl")))
    assert root.listener_count(LLM_STREAM) == 0
    fixed = log_config(tmp_path, answer("fixed"))
    await root.plugin(llm_replay, {"file": fixed.file})
    assert await drain(llm) == answer("fixed")


async def test_throws_on_a_malformed_sidecar_entry_kind_the_assert_never_guard(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """throws on a malformed sidecar entry kind (the assertNever guard)"""
    config = override_config(tmp_path, [{"kind": "chunks", "chunks": []}, {"kind": "explode"}])
    with pytest.raises(HarnessError) as caught:
        install_llm_replay(root, config)
    assert caught.value.message == 'unreachable variant in llm-replay replay entry: {"kind":"explode"}'
    assert caught.value.code == "UNREACHABLE"
    assert root.listener_count(LLM_STREAM) == 0  # checked eagerly: nothing was installed


async def test_rejects_a_hang_entry_when_the_signal_fires_during_the_wait_abort_listener_path(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """rejects a hang entry when the signal fires DURING the wait (abort listener path)"""
    install_llm_replay(root, override_config(tmp_path, [{"kind": "hang"}]))
    controller = AbortController()
    stream = llm.stream(options(signal=controller.signal))
    assert [await anext(stream), await anext(stream)] == HANG_CHUNKS
    waiting = asyncio.ensure_future(anext(stream))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiting.done()  # parked on the signal
    controller.abort("stop")
    with pytest.raises(HarnessError) as caught:
        await waiting
    assert (caught.value.message, caught.value.code) == ("aborted", "ABORTED")


async def test_a_hang_entry_without_a_signal_waits_until_cancelled(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """Extra: with no abort signal only cancellation ends a hang (it never completes by itself)."""
    install_llm_replay(root, override_config(tmp_path, [{"kind": "hang"}]))
    stream = llm.stream(options())
    assert [await anext(stream), await anext(stream)] == HANG_CHUNKS
    waiting = asyncio.ensure_future(anext(stream))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_aborts_mid_replay_of_a_throw_entry_prefix_when_the_signal_is_set(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """aborts mid-replay of a throw-entry prefix when the signal is set"""
    prefix = [start(), delta("a"), delta("b")]
    entries = [{"kind": "throw", "chunks": prefix, "message": "never raised", "code": "SERVER"}]
    install_llm_replay(root, override_config(tmp_path, entries))
    controller = AbortController()
    stream = llm.stream(options(signal=controller.signal))
    assert await anext(stream) == prefix[0]
    controller.abort()
    with pytest.raises(HarnessError) as caught:
        await anext(stream)
    assert not isinstance(caught.value, LlmError)
    assert (caught.value.message, caught.value.code) == ("aborted", "ABORTED")


async def test_surfaces_an_already_aborted_signal_on_a_hang_entry_before_waiting(
    root: Context, llm: LlmService, tmp_path: Path
) -> None:
    """surfaces an already-aborted signal on a hang entry before waiting"""
    install_llm_replay(root, override_config(tmp_path, [{"kind": "hang"}]))
    seen: list[StreamChunk] = []
    with pytest.raises(HarnessError) as caught:
        async for chunk in llm.stream(options(signal=aborted_signal())):
            seen.append(chunk)
    assert seen == HANG_CHUNKS  # the two pre-hang chunks still flow
    assert caught.value.code == "ABORTED"


async def test_install_requires_a_fixture_path(root: Context, llm: LlmService) -> None:
    """Extra: install itself refuses a config without a fixture path (None or empty)."""
    for config in (Config(), Config(file="")):
        with pytest.raises(HarnessError) as caught:
            install_llm_replay(root, config)
        assert caught.value.message == "llm-replay: a fixture path is required (Config.file or $DSH_SNAPSHOT_FILE)"
        assert caught.value.code == "REPLAY_NO_FIXTURE"
    assert root.listener_count(LLM_STREAM) == 0


async def test_the_listener_belongs_to_the_calling_plugin(root: Context, llm: LlmService, tmp_path: Path) -> None:
    """Extra: installed from another plugin's apply, the replay goes when that plugin is disposed."""
    config = log_config(tmp_path, answer("x"))
    owner = await root.plugin(PluginSpec(name="owner", apply=lambda ctx, _config: install_llm_replay(ctx, config)))
    assert root.listener_count(LLM_STREAM) == 1
    await owner.dispose()
    assert root.listener_count(LLM_STREAM) == 0


async def test_finish_error_chunks_replay_in_band(root: Context, llm: LlmService, tmp_path: Path) -> None:
    """Extra: a recorded in-band error finish replays as a chunk; generate() returns it as the finish."""
    chunks: list[StreamChunk] = [
        start(),
        delta("so"),
        finish(ErrorFinish(message="rate limited", code="RATE_LIMIT")),
    ]
    install_llm_replay(root, log_config(tmp_path, chunks))
    result = await llm.generate(options())
    assert result.finish == ErrorFinish(message="rate limited", code="RATE_LIMIT")


async def test_a_value_outside_the_entry_union_is_unreachable() -> None:
    """Extra: playing something that is no replay entry raises through the assert_never guard"""
    stream = play_entry([{"kind": "chunks"}], 0, None)  # type: ignore[list-item]
    with pytest.raises(HarnessError) as caught:
        await anext(stream)
    assert caught.value.message == 'unreachable variant in llm-replay replay entry: {"kind":"chunks"}'
    assert caught.value.code == "UNREACHABLE"
