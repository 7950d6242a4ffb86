"""BlockAssembler properties (SPEC §2.9), over random chunk lists on indices 0..4."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.llm import (
    LLM,
    UNSET,
    AbortedFinish,
    BlockAssembler,
    BlockEndChunk,
    BlockStartChunk,
    ContentBlock,
    ErrorFinish,
    FinishChunk,
    LlmService,
    MaxTokensFinish,
    ReasoningBlock,
    ReasoningDeltaChunk,
    StopFinish,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolCallsFinish,
    UsageChunk,
)
from dsh.kernel import Context
from tests.core.llm.helpers import ScriptedAdapter, options

INDICES = st.integers(min_value=0, max_value=4)
TEXT = st.text(max_size=4)
ASSEMBLABLE = st.sampled_from(["text", "reasoning", "tool-call"])

BLOCKS: st.SearchStrategy[ContentBlock] = st.one_of(
    st.builds(lambda text: TextBlock(text=text), TEXT),
    st.builds(lambda text: ReasoningBlock(text=text), TEXT),
    st.builds(
        lambda call_id, name, arguments: ToolCallBlock(id=call_id, name=name, arguments=arguments), TEXT, TEXT, TEXT
    ),
)

FINISHES = st.sampled_from(
    [StopFinish(), ToolCallsFinish(), MaxTokensFinish(), AbortedFinish(), ErrorFinish(message="boom")]
)


def _tool_delta(index: int, call_id: str, name: str | None, arguments: str) -> StreamChunk:
    return ToolCallDeltaChunk(index=index, id=call_id, name=UNSET if name is None else name, arguments_delta=arguments)


CHUNKS: st.SearchStrategy[StreamChunk] = st.one_of(
    st.builds(lambda i, t: BlockStartChunk(index=i, block_type=t), INDICES, ASSEMBLABLE),
    st.builds(lambda i, t: TextDeltaChunk(index=i, text=t), INDICES, TEXT),
    st.builds(lambda i, t: ReasoningDeltaChunk(index=i, text=t), INDICES, TEXT),
    st.builds(_tool_delta, INDICES, TEXT, st.none() | TEXT, TEXT),
    st.builds(lambda i, b: BlockEndChunk(index=i, block=b), INDICES, BLOCKS),
    st.builds(
        lambda i, o: UsageChunk(usage=TokenUsage(input_tokens=i, output_tokens=o)),
        st.integers(0, 100),
        st.integers(0, 100),
    ),
    st.builds(lambda reason: FinishChunk(reason=reason), FINISHES),
)

STREAMS = st.lists(CHUNKS, max_size=25)


def stream_flush(
    chunks: list[StreamChunk],
) -> tuple[BlockAssembler, list[list[ContentBlock]], list[ContentBlock]]:
    """Push every chunk, flushing after each; return the assembler, flushed prefixes and all output."""
    assembler = BlockAssembler()
    flushed: list[ContentBlock] = []
    prefixes: list[list[ContentBlock]] = []
    for chunk in chunks:
        assembler.push(chunk)
        flushed.extend(assembler.flush_ready())
        prefixes.append(list(flushed))
    return assembler, prefixes, flushed + assembler.flush_remaining()


def one_shot(chunks: list[StreamChunk]) -> BlockAssembler:
    assembler = BlockAssembler()
    for chunk in chunks:
        assembler.push(chunk)
    return assembler


@given(STREAMS)
def test_flush_ready_flush_remaining_blocks_in_order(chunks: list[StreamChunk]) -> None:
    """flushReady() ++ flushRemaining() === blocks(), in order"""
    assembler, _, output = stream_flush(chunks)
    assert output == assembler.blocks()
    assert output == one_shot(chunks).blocks()


@given(STREAMS)
def test_stream_blocks_style_flush_never_yields_a_block_before_an_earlier_open_one(
    chunks: list[StreamChunk],
) -> None:
    """streamBlocks-style flush never yields a block before an earlier open one"""
    assembler, prefixes, _ = stream_flush(chunks)
    final = assembler.blocks()
    for prefix in prefixes:
        assert prefix == final[: len(prefix)]
        assert all(partial.block is not None for partial in list(assembler._partials.values())[: len(prefix)])


@given(STREAMS)
def test_partials_map_size_never_exceeds_the_number_of_distinct_indices_seen(
    chunks: list[StreamChunk],
) -> None:
    """partials map size never exceeds the number of distinct indices seen"""
    assembler = BlockAssembler()
    seen: set[int] = set()
    for chunk in chunks:
        assembler.push(chunk)
        index: int | None = getattr(chunk, "index", None)
        if index is not None:
            seen.add(index)
        assert len(assembler._partials) <= len(seen)
        assert len(assembler._order) == len(assembler._partials)


@given(STREAMS)
def test_re_assembly_is_idempotent_blocks_is_stable_across_repeated_calls(chunks: list[StreamChunk]) -> None:
    """re-assembly is idempotent: blocks() is stable across repeated calls"""
    assembler = one_shot(chunks)
    first = assembler.blocks()
    assert assembler.blocks() == first
    assert list(assembler.message().content) == first
    assert assembler.message().role == "assistant"


@given(STREAMS)
def test_blocks_never_throws_and_yields_only_valid_content_block_tags(chunks: list[StreamChunk]) -> None:
    """blocks() never throws and yields only valid content-block tags"""
    blocks = one_shot(chunks).blocks()
    assert {type(block) for block in blocks} <= {TextBlock, ReasoningBlock, ToolCallBlock}


@given(STREAMS)
def test_finish_reflects_the_last_finish_chunk_or_defaults_to_stop_when_none_arrives(
    chunks: list[StreamChunk],
) -> None:
    """finish reflects the last finish chunk, or defaults to stop when none arrives"""
    finishes = [chunk.reason for chunk in chunks if type(chunk) is FinishChunk]
    expected = finishes[-1] if finishes else StopFinish()
    assert one_shot(chunks).finish == expected
    assert one_shot(chunks).result().finish == expected


@given(STREAMS)
def test_streaming_and_one_shot_assembly_agree_on_usage_and_finish(chunks: list[StreamChunk]) -> None:
    """streaming and one-shot assembly agree on usage and finish"""
    streaming, _, _ = stream_flush(chunks)
    single = one_shot(chunks)
    assert streaming.usage == single.usage
    assert streaming.finish == single.finish
    usages = [chunk.usage for chunk in chunks if type(chunk) is UsageChunk]
    assert single.usage == (usages[-1] if usages else None)


async def _through_service(chunks: list[StreamChunk]) -> tuple[list[ContentBlock], list[ContentBlock]]:
    root = Context()
    try:
        await root.plugin(LlmService)
        llm = root[LLM]
        llm.register_adapter(["m1"], ScriptedAdapter(chunks))
        blocks = [block async for block in llm.stream_blocks(options())]
        result = await llm.generate(options())
        return blocks, list(result.message.content)
    finally:
        await root.dispose()


@settings(max_examples=50, deadline=None)
@given(STREAMS)
def test_stream_blocks_sequence_equals_generate_content_through_the_real_service(
    chunks: list[StreamChunk],
) -> None:
    """Extra (SPEC §2.5): stream_blocks() always yields exactly generate().message.content."""
    blocks, content = asyncio.run(_through_service(chunks))
    assert blocks == content
