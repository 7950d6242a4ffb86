"""BlockAssembler (SPEC §2.4): titles of §2.8 and the assembler edges of §8.17."""

from __future__ import annotations

from typing import cast

import msgspec
import pytest

from dsh.core.errors import HarnessError, assert_never
from dsh.core.llm import (
    BlockAssembler,
    ContentBlock,
    ImageBlock,
    Message,
    ReasoningBlock,
    StopFinish,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    to_json,
)
from tests.core.llm.helpers import end, finish, reasoning_delta, start, text_delta, tool_delta, usage


def feed(chunks: list[StreamChunk]) -> BlockAssembler:
    assembler = BlockAssembler()
    for chunk in chunks:
        assembler.push(chunk)
    return assembler


def streamed(chunks: list[StreamChunk]) -> list[ContentBlock]:
    """What a streaming consumer sees: flush_ready() after every chunk, then flush_remaining()."""
    assembler = BlockAssembler()
    seen: list[ContentBlock] = []
    for chunk in chunks:
        assembler.push(chunk)
        seen.extend(assembler.flush_ready())
    seen.extend(assembler.flush_remaining())
    return seen


# ---------------------------------------------------------------- describe BlockAssembler


def test_assembles_interleaved_text_reasoning_and_tool_call_deltas() -> None:
    """assembles interleaved text, reasoning, and tool-call deltas"""
    assembler = feed(
        [
            start(0, "reasoning"),
            reasoning_delta(0, "let me "),
            start(1, "text"),
            start(2, "tool-call"),
            reasoning_delta(0, "think"),
            end(0, {"type": "reasoning", "text": "let me think"}),
            text_delta(1, "Hel"),
            tool_delta(2, "c1", '{"pa', name="read"),
            text_delta(1, "lo"),
            tool_delta(2, "c1", 'th":"a"}'),
            usage(10, 5),
            finish({"kind": "tool-calls"}),
        ]
    )
    assert to_json(assembler.message()) == {
        "role": "assistant",
        "content": [
            {"type": "reasoning", "text": "let me think"},
            {"type": "text", "text": "Hello"},
            {"type": "tool-call", "id": "c1", "name": "read", "arguments": '{"path":"a"}'},
        ],
    }
    assert to_json(assembler.usage) == {"inputTokens": 10, "outputTokens": 5}
    assert to_json(assembler.finish) == {"kind": "tool-calls"}


def test_returns_the_completed_block_from_push_on_block_end() -> None:
    """returns the completed block from push() on block-end"""
    assembler = BlockAssembler()
    block = TextBlock(text="hi")
    returns = [
        assembler.push(start(0, "text")),
        assembler.push(text_delta(0, "hi")),
        assembler.push(end(0, block)),
        assembler.push(usage(1, 1)),
        assembler.push(finish()),
    ]
    assert returns == [None, None, block, None, None]
    assert returns[2] is block


def test_tolerates_deltas_without_explicit_block_start_end() -> None:
    """tolerates deltas without explicit block-start/end"""
    assembler = feed([text_delta(0, "alone")])
    assert to_json(assembler.blocks()) == [{"type": "text", "text": "alone"}]
    assert to_json(assembler.finish) == {"kind": "stop"}


def test_returns_undefined_usage_when_no_usage_chunk_was_received() -> None:
    """returns undefined usage when no usage chunk was received"""
    assembler = feed([text_delta(0, "x"), finish()])
    assert assembler.usage is None


def test_reuses_an_existing_partial_when_ensure_is_called_with_a_tracked_index() -> None:
    """reuses an existing partial when ensure() is called with a tracked index"""
    assembler = BlockAssembler()
    assembler.push(start(0, "text"))
    block = TextBlock(text="done")
    assert assembler.push(end(0, block)) is block
    assert assembler.blocks() == [block]


def test_throws_from_assemble_when_a_partial_has_an_unhandled_block_type() -> None:
    """throws from assemble() when a partial has an unhandled blockType"""
    assembler = feed([start(0, "image")])
    with pytest.raises(HarnessError, match='cannot assemble incomplete block of type "image"'):
        assembler.blocks()
    with pytest.raises(HarnessError, match='cannot assemble incomplete block of type "image"'):
        assembler.flush_remaining()


def test_must_get_throws_when_an_index_is_missing_from_the_partials_map_invariant_violation() -> None:
    """mustGet throws when an index is missing from the partials map (invariant violation)"""
    assembler = feed([text_delta(0, "x")])
    assembler._order.append(7)  # corrupt the private state the invariant protects
    with pytest.raises(HarnessError, match="BlockAssembler invariant violated: no partial for index 7") as caught:
        assembler.blocks()
    assert caught.value.code == "INVARIANT"
    assembler.push(end(0, {"type": "text", "text": "x"}))
    with pytest.raises(HarnessError, match="no partial for index 7"):
        assembler.flush_ready()


def test_assembles_open_blocks_at_end_of_stream_via_flush_remaining() -> None:
    """assembles open blocks at end of stream via flushRemaining"""
    assembler = BlockAssembler()
    assembler.push(start(0, "text"))
    assembler.push(text_delta(0, "open"))
    assembler.push(end(1, {"type": "text", "text": "closed"}))
    assert assembler.flush_ready() == []
    rest = assembler.flush_remaining()
    assert rest == [TextBlock(text="open"), TextBlock(text="closed")]
    assert rest == assembler.blocks()
    assert assembler.flush_remaining() == []
    assert assembler.flush_ready() == []


def test_result_omits_usage_key_when_no_usage_was_received() -> None:
    """result() omits usage key when no usage was received"""
    result = feed([text_delta(0, "x")]).result()
    assert result.usage is None
    assert result.finish == StopFinish()
    assert result.message == Message(role="assistant", content=(TextBlock(text="x"),))


def test_ignores_duplicate_block_start_for_the_same_index() -> None:
    """ignores duplicate block-start for the same index"""
    assembler = feed([start(0, "text"), text_delta(0, "a"), start(0, "reasoning"), text_delta(0, "b")])
    assert to_json(assembler.blocks()) == [{"type": "text", "text": "ab"}]
    assert assembler._order == [0]


def test_ignores_tool_call_delta_stragglers_after_block_end() -> None:
    """ignores tool-call-delta stragglers after block-end"""
    block = ToolCallBlock(id="c1", name="read", arguments="{}")
    assembler = feed(
        [
            tool_delta(0, "c1", "{", name="read"),
            end(0, block),
            tool_delta(0, "c9", '"late":1}', name="write"),
        ]
    )
    assert assembler.blocks() == [block]
    assert assembler._partials[0].tool_call_name == "read"
    assert assembler._partials[0].arguments == ["{"]


def test_assembles_tool_call_with_generated_id_fallback_when_no_id_provided() -> None:
    """assembles tool-call with generated id fallback when no id provided (a delta always carries an id now)"""
    assert feed([start(3, "tool-call")]).blocks() == [ToolCallBlock(id="call-3", name="", arguments="")]


def test_includes_usage_in_result_when_usage_was_received() -> None:
    """includes usage in result() when usage was received"""
    result = feed([text_delta(0, "x"), usage(3, 4), usage(7, 8), finish()]).result()
    assert to_json(result.usage) == {"inputTokens": 7, "outputTokens": 8}


# ---------------------------------------------------------------- describe assertNever


def test_throws_with_diagnostics_when_a_value_escapes_a_closed_union_at_runtime() -> None:
    """throws with diagnostics when a value escapes a closed union at runtime"""
    with pytest.raises(HarnessError) as caught:
        assert_never({"type": "rogue"}, "test-context")
    assert str(caught.value) == 'unreachable variant in test-context: {"type":"rogue"}'
    with pytest.raises(HarnessError) as bare:
        assert_never(None)
    assert str(bare.value) == "unreachable variant: undefined"


def test_block_assembler_push_rejects_chunks_outside_the_closed_stream_chunk_union() -> None:
    """BlockAssembler.push rejects chunks outside the closed StreamChunk union"""
    assembler = BlockAssembler()
    rogue = cast(StreamChunk, TextBlock(text="rogue"))
    with pytest.raises(HarnessError, match=r"unreachable variant in BlockAssembler\.push") as caught:
        assembler.push(rogue)
    assert caught.value.code == "UNREACHABLE"
    assert assembler.blocks() == []


# ------------------------------------------- describe BlockAssembler regressions (property-test findings)


def test_first_block_end_wins_a_duplicate_block_end_for_a_closed_index_is_ignored() -> None:
    """first block-end wins: a duplicate block-end for a closed index is ignored"""
    first = TextBlock(text="first")
    chunks: list[StreamChunk] = [end(0, first), end(0, {"type": "text", "text": "second"})]
    assert streamed(chunks) == [first]
    assert feed(chunks).blocks() == [first]


def test_push_returns_undefined_for_a_duplicate_block_end_it_closed_nothing() -> None:
    """push returns undefined for a duplicate block-end (it closed nothing)"""
    assembler = BlockAssembler()
    assert assembler.push(end(0, {"type": "text", "text": "a"})) is not None
    assert assembler.push(end(0, {"type": "text", "text": "b"})) is None


# ------------------------------------ describe LOW: BlockAssembler and streamBlocks edge cases (§8.17)


def test_ignores_deltas_arriving_after_block_end_for_the_same_index_malformed_stream() -> None:
    """ignores deltas arriving after block-end for the same index (malformed stream)"""
    assembler = feed(
        [
            text_delta(0, "a"),
            end(0, {"type": "text", "text": "a"}),
            text_delta(0, "late"),
            reasoning_delta(1, "r"),
            end(1, {"type": "reasoning", "text": "r"}),
            reasoning_delta(1, "late"),
        ]
    )
    assert to_json(assembler.blocks()) == [{"type": "text", "text": "a"}, {"type": "reasoning", "text": "r"}]
    assert assembler._partials[0].text == ["a"]
    assert assembler._partials[1].text == ["r"]


def test_assembles_tool_call_blocks_from_deltas_without_block_end() -> None:
    """assembles tool-call blocks from deltas without block-end"""
    assembler = feed(
        [
            tool_delta(0, "c1", '{"a":', name="calc"),
            tool_delta(0, "c1", "1}", name=""),
            tool_delta(1, "c2", "{}", name="other"),
        ]
    )
    assert to_json(assembler.blocks()) == [
        {"type": "tool-call", "id": "c1", "name": "calc", "arguments": '{"a":1}'},
        {"type": "tool-call", "id": "c2", "name": "other", "arguments": "{}"},
    ]


# ------------------------------------------------------------------------------- extras


def test_flush_ready_returns_each_closed_block_once_in_order() -> None:
    """Extra: flush_ready() hands out each closed block once, stopping at the first open one."""
    assembler = BlockAssembler()
    a = TextBlock(text="a")
    c = TextBlock(text="c")
    assembler.push(end(0, a))
    assembler.push(text_delta(1, "b"))
    assembler.push(end(2, c))
    assert assembler.flush_ready() == [a]
    assert assembler.flush_ready() == []
    assembler.push(end(1, {"type": "text", "text": "b"}))
    assert assembler.flush_ready() == [TextBlock(text="b"), c]
    assert assembler.flush_remaining() == []


def test_block_end_of_an_unseen_index_opens_it_with_the_block_type() -> None:
    """Extra: a lone block-end records its index in first-seen order."""
    assembler = feed([text_delta(1, "x"), end(0, {"type": "image", "url": "u"})])
    assert assembler.blocks() == [TextBlock(text="x"), ImageBlock(url="u")]


def test_default_finish_is_stop_and_last_finish_wins() -> None:
    """Extra: the default finish is an immutable stop; the last finish chunk wins."""
    assembler = BlockAssembler()
    assert assembler.finish == StopFinish()
    assembler.push(finish({"kind": "max-tokens"}))
    assembler.push(finish({"kind": "error", "message": "boom", "code": "AUTH"}))
    assert to_json(assembler.result().finish) == {"kind": "error", "message": "boom", "code": "AUTH"}


def test_blocks_are_the_carried_values_and_assembled_blocks_are_immutable() -> None:
    """Extra: a block-end's block is returned as that value; an assembled block is a frozen Struct."""
    carried = ReasoningBlock(text="r")
    assembler = feed([end(0, carried), text_delta(1, "t")])
    blocks = assembler.blocks()
    assert blocks[0] is carried
    assert blocks[1] == TextBlock(text="t")
    with pytest.raises(AttributeError):
        blocks[1].text = "changed"  # type: ignore[misc]
    assert assembler.message().content == (carried, TextBlock(text="t"))


def test_an_unknown_block_in_a_block_end_is_kept_as_is() -> None:
    """Extra: an unknown block variant from a provider passes through the assembler unchanged."""
    chunk = end(0, {"type": "future", "payload": [1, 2]})
    assert type(chunk.block) is msgspec.Raw
    blocks: list[ContentBlock] = feed([chunk]).blocks()
    assert blocks == [chunk.block]
    assert bytes(blocks[0]) == b'{"type":"future","payload":[1,2]}'  # type: ignore[arg-type]
