"""LlmService (SPEC §2.5-2.7): titles of §2.7, the streamBlocks edges of §8.17, unload and rollback."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from dsh.core.errors import HarnessError, LlmError, is_harness_error
from dsh.core.llm import (
    LLM,
    LLM_ADAPTER_CHANGE,
    LLM_GENERATE,
    LLM_STREAM,
    ContentBlock,
    GenerateOptions,
    GenerateResult,
    LlmAdapter,
    LlmService,
    MaxTokensFinish,
    Message,
    ReasoningBlock,
    StopFinish,
    StreamChunk,
    TextBlock,
    to_json,
)
from dsh.kernel import Context, Effect, KernelError, PluginSpec
from tests.core.llm.helpers import (
    IteratorAdapter,
    ScriptedAdapter,
    end,
    finish,
    options,
    start,
    text_delta,
    usage,
)

HI: list[StreamChunk] = [text_delta(0, "h"), text_delta(0, "i"), finish()]


async def collect(stream: AsyncIterator[Any]) -> list[Any]:
    return [item async for item in stream]


async def load_child(root: Context, body: Callable[[Context], object]) -> Context:
    """Load a plugin that declares ``llm`` and runs ``body``; return its context."""
    holder: list[Context] = []

    def apply(ctx: Context, _config: object) -> None:
        holder.append(ctx)
        body(ctx)

    await root.plugin(PluginSpec(name="child", apply=apply, inject=[LLM.name]))
    return holder[0]


# ------------------------------------------------------------------------ describe LlmService


async def test_routes_stream_to_the_registered_adapter_and_generate_assembles_it(llm: LlmService) -> None:
    """routes stream() to the registered adapter and generate() assembles it"""
    adapter = ScriptedAdapter(HI)
    llm.register_adapter(["m1"], adapter)
    request = options("m1")
    assert await collect(llm.stream(request)) == HI
    result = await llm.generate(request)
    assert to_json(result.message) == {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}
    assert result.finish == StopFinish()
    assert result.usage is None
    assert adapter.calls == [request, request]
    assert adapter.calls[0] is request


async def test_throws_no_adapter_for_unregistered_models(llm: LlmService) -> None:
    """throws NO_ADAPTER for unregistered models"""
    with pytest.raises(LlmError, match='no adapter registered for model "ghost"') as caught:
        await llm.generate(options("ghost"))
    assert caught.value.code == "NO_ADAPTER"
    # stream() raises from the call itself, stream_blocks() on first iteration.
    with pytest.raises(LlmError, match="no adapter registered") as direct:
        llm.stream(options("ghost"))
    assert direct.value.code == "NO_ADAPTER"
    blocks = llm.stream_blocks(options("ghost"))
    with pytest.raises(LlmError, match="no adapter registered"):
        await anext(blocks)


async def test_unregisters_adapters_when_the_owning_fiber_is_disposed_hmr_safety(
    root: Context, llm: LlmService
) -> None:
    """unregisters adapters when the owning fiber is disposed (HMR safety)"""
    listeners_before = root.listener_count(LLM_ADAPTER_CHANGE)
    service_effects = llm.own_ctx.fiber.effect_count
    registrations: list[Effect] = []
    child = await load_child(
        root, lambda ctx: registrations.append(ctx[LLM].register_adapter(["m1", "m2"], ScriptedAdapter(HI)))
    )
    assert llm.models() == ["m1", "m2"]
    [registration] = registrations
    assert registration.fiber is child.fiber  # owned by the caller, not by the service
    assert llm.own_ctx.fiber.effect_count == service_effects
    await child.fiber.dispose()
    assert registration.disposed
    assert llm.models() == []
    assert llm._adapters == {}
    assert child.fiber.effect_count == 0
    assert root.listener_count(LLM_ADAPTER_CHANGE) == listeners_before
    with pytest.raises(LlmError) as caught:
        await llm.generate(options("m1"))
    assert caught.value.code == "NO_ADAPTER"


async def test_lets_llm_stream_waterfall_listeners_wrap_the_underlying_stream(root: Context, llm: LlmService) -> None:
    """lets llm/stream waterfall listeners wrap the underlying stream"""
    llm.register_adapter(["m1"], ScriptedAdapter(HI))
    extra = text_delta(99, "!")

    def wrap(opts: GenerateOptions, next_: Callable[[], AsyncIterator[StreamChunk]]) -> AsyncIterator[StreamChunk]:
        async def wrapped() -> AsyncIterator[StreamChunk]:
            yield extra
            async for chunk in next_():
                yield chunk

        return wrapped()

    root.on(LLM_STREAM, wrap)
    chunks = await collect(llm.stream(options("m1")))
    assert len(chunks) == 4
    assert chunks == [extra, *HI]
    result = await llm.generate(options("m1"))  # generate drains the same waterfall
    assert to_json(result.message.content) == [{"type": "text", "text": "!"}, {"type": "text", "text": "hi"}]


async def test_lets_llm_generate_waterfall_listeners_intercept_and_transform_the_result(
    root: Context, llm: LlmService
) -> None:
    """lets llm/generate waterfall listeners intercept and transform the result"""
    llm.register_adapter(["m1"], ScriptedAdapter(HI))

    async def transform(opts: GenerateOptions, next_: Callable[[], Awaitable[GenerateResult]]) -> GenerateResult:
        result = await next_()
        result.finish = MaxTokensFinish()
        return result

    root.on(LLM_GENERATE, transform)
    result = await llm.generate(options("m1"))
    assert to_json(result.finish) == {"kind": "max-tokens"}
    assert to_json(result.message.content) == [{"type": "text", "text": "hi"}]


def test_creates_llm_error_with_a_code_for_programmatic_handling() -> None:
    """creates LlmError with a code for programmatic handling"""
    error = LlmError("rate limited", "RATE_LIMIT")
    assert error.name == "LlmError"
    assert error.message == "rate limited"
    assert str(error) == "rate limited"
    assert error.code == "RATE_LIMIT"
    assert isinstance(error, Exception)


def test_llm_error_extends_the_shared_harness_error_base() -> None:
    """LlmError extends the shared HarnessError base"""
    error = LlmError("denied", "AUTH", 401)
    assert is_harness_error(error)
    assert isinstance(error, HarnessError)
    assert error.code == "AUTH"
    assert error.status == 401


def test_harness_error_carries_a_code_names_itself_by_subclass_and_chains_cause() -> None:
    """HarnessError carries a code, names itself by subclass, and chains cause"""
    cause = ValueError("root cause")
    error = HarnessError("wrapped", "UNKNOWN", cause)
    assert error.name == "HarnessError"
    assert error.code == "UNKNOWN"
    assert error.cause is cause
    assert error.__cause__ is cause
    assert not is_harness_error(ValueError("plain"))
    assert not is_harness_error("a string")


async def test_disposes_adapter_registration_on_adapter_change_event_emission(root: Context, llm: LlmService) -> None:
    """disposes adapter registration on adapter-change event emission"""
    seen: list[list[str]] = []
    root.on(LLM_ADAPTER_CHANGE, lambda: seen.append(llm.models()))
    dispose = llm.register_adapter(["m1"], ScriptedAdapter(HI))
    assert seen == [["m1"]]
    dispose()
    assert seen == [["m1"], []]
    dispose()  # idempotent: no second removal event
    assert seen == [["m1"], []]


async def test_rejects_duplicate_adapter_registration_with_duplicate_adapter_code(llm: LlmService) -> None:
    """rejects duplicate adapter registration with DUPLICATE_ADAPTER code"""
    first = ScriptedAdapter(HI)
    llm.register_adapter(["m1"], first)
    with pytest.raises(LlmError, match="already registered") as caught:
        llm.register_adapter(["m2", "m1"], ScriptedAdapter([]))
    assert caught.value.code == "DUPLICATE_ADAPTER"
    assert str(caught.value) == 'an adapter for model "m1" is already registered'
    assert llm.models() == ["m1"]  # all or nothing: m2 was not registered either
    assert llm._adapters["m1"] is first


async def test_rolls_back_the_adapter_entry_when_an_adapter_change_listener_throws_p1_1(
    root: Context, llm: LlmService, caplog: pytest.LogCaptureFixture
) -> None:
    """rolls back the adapter entry when an adapter-change listener throws (P1-1)"""

    def explode() -> None:
        raise RuntimeError("listener exploded")

    listener = root.on(LLM_ADAPTER_CHANGE, explode)
    effects_before = root.fiber.effect_count
    with caplog.at_level(logging.ERROR), pytest.raises(RuntimeError, match="listener exploded"):
        llm.register_adapter(["m1"], ScriptedAdapter(HI))
    assert llm.models() == []
    assert root.fiber.effect_count == effects_before
    # the rollback re-emits the change event; the listener's second raise is logged, not lost
    assert any("listener exploded" in record.getMessage() for record in caplog.records)
    listener()
    dispose = llm.register_adapter(["m1"], ScriptedAdapter(HI))
    assert llm.models() == ["m1"]
    assert to_json((await llm.generate(options("m1"))).message.content) == [{"type": "text", "text": "hi"}]
    dispose()
    assert llm.models() == []


# ------------------------------------ describe LOW: BlockAssembler and streamBlocks edge cases (§8.17)


async def test_stream_blocks_flushes_delta_only_blocks_at_end_of_stream_matches_generate(
    llm: LlmService,
) -> None:
    """streamBlocks flushes delta-only blocks at end of stream (matches generate())"""
    llm.register_adapter(["m1"], ScriptedAdapter([text_delta(0, "a"), text_delta(1, "b"), text_delta(0, "c")]))
    blocks = await collect(llm.stream_blocks(options("m1")))
    assert blocks == [TextBlock(text="ac"), TextBlock(text="b")]
    assert tuple(blocks) == (await llm.generate(options("m1"))).message.content


async def test_stream_blocks_preserves_stream_order_when_an_open_block_precedes_a_closed_one(
    llm: LlmService,
) -> None:
    """streamBlocks preserves stream order when an open block precedes a closed one"""
    closed = TextBlock(text="second")
    llm.register_adapter(["m1"], ScriptedAdapter([text_delta(0, "first"), end(1, closed), finish()]))
    blocks = await collect(llm.stream_blocks(options("m1")))
    assert blocks == [TextBlock(text="first"), closed]
    assert tuple(blocks) == (await llm.generate(options("m1"))).message.content


async def test_stream_blocks_yields_closed_blocks_incrementally_once_preceding_blocks_close(
    llm: LlmService,
) -> None:
    """streamBlocks yields closed blocks incrementally once preceding blocks close"""
    b0 = TextBlock(text="zero")
    b1 = TextBlock(text="one")
    b2 = ReasoningBlock(text="two")
    adapter = ScriptedAdapter(
        [
            start(0, "text"),
            text_delta(0, "zero"),
            end(0, b0),  # chunk 3: block 0 is ready at once
            text_delta(1, "one"),
            end(2, b2),  # chunk 5: block 2 closed but block 1 still open
            end(1, b1),  # chunk 6: blocks 1 and 2 are ready together
            usage(1, 2),
            finish(),
        ]
    )
    llm.register_adapter(["m1"], adapter)
    received: list[tuple[ContentBlock, int]] = []
    async for block in llm.stream_blocks(options("m1")):
        received.append((block, adapter.pulled))  # the adapter is pulled lazily: this is the chunk count
    assert received == [(b0, 3), (b1, 6), (b2, 6)]
    assert adapter.closed == 1


# ----------------------------------------------------------------------------------- extras


async def test_a_short_circuiting_stream_listener_needs_no_adapter(root: Context, llm: LlmService) -> None:
    """Extra (SPEC §2.5): the adapter lookup happens in inner, so a listener may answer alone."""

    async def canned() -> AsyncIterator[StreamChunk]:
        yield text_delta(0, "canned")
        yield finish()

    root.on(LLM_STREAM, lambda opts, next_: canned())
    result = await llm.generate(options("unregistered"))
    assert to_json(result.message.content) == [{"type": "text", "text": "canned"}]
    assert llm.models() == []


async def test_a_short_circuiting_generate_listener_needs_no_stream(root: Context, llm: LlmService) -> None:
    """Extra: an llm/generate listener that does not call next() owns the answer."""
    answer = GenerateResult(message=Message(role="assistant", content=()), finish=StopFinish())

    async def own(opts: GenerateOptions, next_: Callable[[], Awaitable[GenerateResult]]) -> GenerateResult:
        return answer

    root.on(LLM_GENERATE, own)
    assert await llm.generate(options("unregistered")) is answer


async def test_models_lists_registration_order_as_a_fresh_list(llm: LlmService) -> None:
    """Extra: models() is in registration order and the caller may keep or mutate it."""
    llm.register_adapter(["b", "a"], ScriptedAdapter(HI))
    llm.register_adapter(["c"], ScriptedAdapter(HI))
    models = llm.models()
    assert models == ["b", "a", "c"]
    models.clear()
    assert llm.models() == ["b", "a", "c"]


async def test_a_model_listed_twice_in_one_registration_is_rejected_without_change(
    root: Context, llm: LlmService
) -> None:
    """Extra: a registration naming one model twice changes nothing and says how to fix it."""
    seen: list[list[str]] = []
    root.on(LLM_ADAPTER_CHANGE, lambda: seen.append(llm.models()))
    with pytest.raises(LlmError, match="listed twice in one registration: list each model once") as caught:
        llm.register_adapter(["x", "y", "x"], ScriptedAdapter(HI))
    assert caught.value.code == "DUPLICATE_ADAPTER"
    assert llm.models() == []
    assert seen == []
    llm.register_adapter(["x", "y"], ScriptedAdapter(HI))
    assert llm.models() == ["x", "y"]


async def test_a_bare_string_of_models_is_refused(llm: LlmService) -> None:
    """Extra: register_adapter("m1", ...) would register "m" and "1"; it is refused with the fix."""
    with pytest.raises(TypeError, match=r'pass \["m1"\]'):
        llm.register_adapter("m1", ScriptedAdapter(HI))
    assert llm.models() == []


async def test_registering_through_a_disposed_plugin_context_fails(root: Context, llm: LlmService) -> None:
    """Extra: a disposed caller cannot register (its effect would never be undone)."""
    child = await load_child(root, lambda ctx: None)
    handle = child[LLM]
    await child.fiber.dispose()
    with pytest.raises(KernelError, match="cannot create effect on inactive context"):
        handle.register_adapter(["m1"], ScriptedAdapter(HI))
    assert llm.models() == []


async def test_the_service_disappears_with_its_fiber(root: Context) -> None:
    """Extra: the llm service is provided under "llm" only while its fiber lives."""
    fiber = await root.plugin(LlmService)
    service = root.get(LLM)
    assert isinstance(service, LlmService)
    await fiber.dispose()
    assert root.get(LLM) is None


async def test_generate_raises_what_the_adapter_raises_and_closes_the_stream(llm: LlmService) -> None:
    """Extra: a transport failure raised while iterating reaches the generate() caller."""
    adapter = ScriptedAdapter([text_delta(0, "part")], error=LlmError("server down", "SERVER", 503))
    llm.register_adapter(["m1"], adapter)
    with pytest.raises(LlmError, match="server down") as caught:
        await llm.generate(options("m1"))
    assert caught.value.status == 503
    assert adapter.closed == 1


async def test_generate_returns_an_in_band_error_finish_instead_of_raising(llm: LlmService) -> None:
    """Extra: finish {kind: error} is data for the caller, not an exception."""
    llm.register_adapter(["m1"], ScriptedAdapter([usage(1, 0), finish({"kind": "error", "message": "401"})]))
    result = await llm.generate(options("m1"))
    assert to_json(result.finish) == {"kind": "error", "message": "401"}
    assert to_json(result.usage) == {"inputTokens": 1, "outputTokens": 0}
    assert result.message.content == ()


async def test_generate_closes_the_adapter_stream_when_a_chunk_is_rejected(llm: LlmService) -> None:
    """Extra: a chunk outside the union fails generate() and the adapter's stream is closed at once."""
    rogue: Any = TextBlock(text="rogue")
    adapter = ScriptedAdapter([text_delta(0, "a"), rogue, text_delta(0, "never")])
    llm.register_adapter(["m1"], adapter)
    with pytest.raises(HarnessError, match=r"unreachable variant in BlockAssembler\.push"):
        await llm.generate(options("m1"))
    assert adapter.pulled == 2
    assert adapter.closed == 1


async def test_closing_stream_blocks_early_closes_the_adapter_stream(llm: LlmService) -> None:
    """Extra: abandoning stream_blocks() (aclose) closes the adapter's stream promptly."""
    adapter = ScriptedAdapter([end(0, {"type": "text", "text": "a"}), text_delta(1, "b"), finish()])
    llm.register_adapter(["m1"], adapter)
    blocks = llm.stream_blocks(options("m1"))
    assert await anext(blocks) == TextBlock(text="a")
    assert adapter.closed == 0
    await blocks.aclose()
    assert adapter.closed == 1
    assert adapter.pulled == 1


async def test_plain_async_iterators_from_adapters_are_drained(llm: LlmService) -> None:
    """Extra: an adapter may return any async iterator, not only an async generator."""
    llm.register_adapter(["m1"], IteratorAdapter(HI))
    assert to_json((await llm.generate(options("m1"))).message.content) == [{"type": "text", "text": "hi"}]
    assert await collect(llm.stream_blocks(options("m1"))) == [TextBlock(text="hi")]


def test_llm_adapter_is_abstract() -> None:
    """Extra: LlmAdapter cannot be used without implementing stream()."""
    with pytest.raises(TypeError, match="abstract"):
        LlmAdapter()  # type: ignore[abstract]


async def test_the_service_key_is_named_llm(llm: LlmService) -> None:
    """Extra: YAML and inject lists name the service "llm"."""
    assert LLM.name == "llm"
    assert llm.service_name == "llm"
    assert isinstance(llm, LlmService)
