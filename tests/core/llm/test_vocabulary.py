"""The llm vocabulary helpers, the event catalog and the package surface."""

from __future__ import annotations

import dsh.core.llm as package
from dsh.core.llm import (
    LLM_ADAPTER_CHANGE,
    LLM_GENERATE,
    LLM_STREAM,
    GenerateOptions,
    GenerateResult,
    ImageBlock,
    Message,
    ReasoningBlock,
    StopFinish,
    TextBlock,
    parse_content_block,
    text,
    text_of,
)
from dsh.kernel import EmitEvent, WaterfallEvent


def test_text_builds_a_text_block() -> None:
    assert text("hello") == TextBlock(text="hello")


def test_generate_result_defaults_to_a_stop_finish_and_no_usage() -> None:
    result = GenerateResult(message=Message(role="assistant", content=()))
    assert result.finish == StopFinish()
    assert result.usage is None


def test_generate_options_leave_every_optional_field_unset() -> None:
    opts = GenerateOptions(model="m", messages=[])
    unset = (opts.system, opts.tools, opts.prefill, opts.temperature, opts.max_tokens, opts.stop, opts.signal)
    assert unset == (None,) * 7


def test_the_event_catalog_names_and_modes() -> None:
    """SPEC §2.6: two waterfalls and one emit, named domain/verb, each documented."""
    assert isinstance(LLM_STREAM, WaterfallEvent)
    assert isinstance(LLM_GENERATE, WaterfallEvent)
    assert isinstance(LLM_ADAPTER_CHANGE, EmitEvent)
    assert [LLM_STREAM.name, LLM_GENERATE.name, LLM_ADAPTER_CHANGE.name] == [
        "llm/stream",
        "llm/generate",
        "llm/adapter-change",
    ]
    assert [event.mode for event in (LLM_STREAM, LLM_GENERATE, LLM_ADAPTER_CHANGE)] == [
        "waterfall",
        "waterfall",
        "emit",
    ]
    assert all(event.doc for event in (LLM_STREAM, LLM_GENERATE, LLM_ADAPTER_CHANGE))


def test_the_package_exports_a_sorted_resolvable_all() -> None:
    names = package.__all__
    assert len(set(names)) == len(names)
    assert all(hasattr(package, name) for name in names)
    for required in (
        "LLM",
        "LlmService",
        "LlmAdapter",
        "BlockAssembler",
        "parse_stream_chunk",
        "StreamChunk",
    ):
        assert required in names


def test_text_of_joins_the_text_blocks_and_skips_the_others() -> None:
    """(extra) text_of concatenates text blocks in order; images, calls and reasoning are skipped"""
    content = (
        text("a"),
        ImageBlock(url="x", mime_type="image/png"),
        ReasoningBlock(text="hidden"),
        parse_content_block({"type": "later", "text": "unknown"}),
        text("b"),
    )
    assert text_of(content) == "ab"
    assert text_of([]) == ""
