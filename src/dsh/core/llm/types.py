"""The provider-neutral vocabulary every plugin speaks (SPEC §2.1-2.2).

Every value here is an immutable ``msgspec.Struct``: built once, shared by every
reader, never copied. Fields are snake_case in Python and camelCase on the wire
(``tool_call_id`` ↔ ``toolCallId``); a variant's tag is its ``type`` (blocks,
chunks) or ``kind`` (sources, finish reasons), so the encoded value is exactly the
JSON of SPEC §2. An optional field is :data:`UNSET` when absent (never ``None``:
the wire has no ``null`` for it), and absent fields are not written.

Sequences are tuples. The open unions (content blocks, sources, finish reasons)
may also hold an :data:`Unknown` value: a variant this version does not know, read
from another writer, kept as its exact JSON and written back unchanged (SPEC §0.6).
Code that ``match``\\es over them must fall through on anything else.

Construction does not check types (that is the decoder's job at the edge, see
:mod:`dsh.core.llm.codec`); build values with the right types.

The values are not tracked by the cycle collector (``gc=False``): a session holds
every chunk it streamed, and scanning them made collector pauses grow with the
number of agents. So a value must never be part of a reference cycle: its fields
hold values, tuples, and JSON data (``dict``/``list``) built for it, never a
container that refers back to the value.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeAlias

from msgspec import UNSET, Meta, Raw, Struct, UnsetType

from dsh.kernel import AbortSignal

CallId: TypeAlias = str
Role: TypeAlias = Literal["system", "user", "assistant"]
Cache: TypeAlias = Literal["ephemeral"]

Count: TypeAlias = Annotated[int, Meta(ge=0)]
"""A non-negative JSON integer (chunk indices, token counts; turn and step numbers, seq, epoch ms)."""

Unknown: TypeAlias = Raw
"""A variant of an open union this version does not know: its exact JSON, written back as is."""


class _Block(Struct, frozen=True, gc=False, tag_field="type", rename="camel"):
    """Base of the content blocks (not itself a block)."""


class TextBlock(_Block, frozen=True, tag="text"):
    text: str
    cache: Cache | UnsetType = UNSET


class ReasoningBlock(_Block, frozen=True, tag="reasoning"):
    text: str


class ToolCallBlock(_Block, frozen=True, tag="tool-call"):
    id: CallId
    name: str
    arguments: str


class ToolResultBlock(_Block, frozen=True, tag="tool-result"):
    tool_call_id: CallId
    content: tuple[ContentBlock, ...]
    is_error: bool | UnsetType = UNSET
    cache: Cache | UnsetType = UNSET


class ImageBlock(_Block, frozen=True, tag="image"):
    url: str
    mime_type: str | UnsetType = UNSET
    cache: Cache | UnsetType = UNSET


ContentBlock: TypeAlias = TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock | ImageBlock | Unknown


class Message(Struct, frozen=True, gc=False):
    role: Role
    content: tuple[ContentBlock, ...]


class _Source(Struct, frozen=True, gc=False, tag_field="kind", rename="camel"):
    """Base of the message sources."""


class UserSource(_Source, frozen=True, tag="user"):
    pass


class PluginSource(_Source, frozen=True, tag="plugin"):
    plugin: str


class AgentSource(_Source, frozen=True, tag="agent"):
    agent_id: str


MessageSource: TypeAlias = UserSource | PluginSource | AgentSource | Unknown


class _Finish(Struct, frozen=True, gc=False, tag_field="kind"):
    """Base of the finish reasons."""


class StopFinish(_Finish, frozen=True, tag="stop"):
    pass


class ToolCallsFinish(_Finish, frozen=True, tag="tool-calls"):
    pass


class MaxTokensFinish(_Finish, frozen=True, tag="max-tokens"):
    pass


class AbortedFinish(_Finish, frozen=True, tag="aborted"):
    pass


class ErrorFinish(_Finish, frozen=True, tag="error", rename="camel"):
    """A failed model call reported in band: ``code`` as in :class:`~dsh.core.errors.LlmError`;
    ``status`` the HTTP status and ``retry_after`` the seconds the provider asked to wait, when known."""

    message: str
    code: str | UnsetType = UNSET
    status: int | UnsetType = UNSET
    retry_after: Annotated[float, Meta(ge=0)] | UnsetType = UNSET


FinishReason: TypeAlias = StopFinish | ToolCallsFinish | MaxTokensFinish | AbortedFinish | ErrorFinish | Unknown


class TokenUsage(Struct, frozen=True, gc=False, rename="camel"):
    """Disjoint token counts: billed input = input + cache_read + cache_write."""

    input_tokens: Count
    output_tokens: Count
    cache_read_tokens: Count | UnsetType = UNSET
    cache_write_tokens: Count | UnsetType = UNSET
    reasoning_tokens: Count | UnsetType = UNSET


class ToolSchema(Struct, frozen=True, gc=False):
    """A tool as the model sees it; ``parameters`` is a JSON Schema object (do not mutate it)."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool | UnsetType = UNSET


class _Chunk(Struct, frozen=True, gc=False, tag_field="type", rename="camel"):
    """Base of the stream chunks."""


class BlockStartChunk(_Chunk, frozen=True, tag="block-start"):
    index: Count
    block_type: str


class TextDeltaChunk(_Chunk, frozen=True, tag="text-delta"):
    index: Count
    text: str


class ReasoningDeltaChunk(_Chunk, frozen=True, tag="reasoning-delta"):
    index: Count
    text: str


class ToolCallDeltaChunk(_Chunk, frozen=True, kw_only=True, tag="tool-call-delta"):
    index: Count
    id: CallId
    name: str | UnsetType = UNSET
    arguments_delta: str


class BlockEndChunk(_Chunk, frozen=True, tag="block-end"):
    index: Count
    block: ContentBlock


class UsageChunk(_Chunk, frozen=True, tag="usage"):
    usage: TokenUsage


class FinishChunk(_Chunk, frozen=True, tag="finish"):
    reason: FinishReason


StreamChunk: TypeAlias = (
    BlockStartChunk
    | TextDeltaChunk
    | ReasoningDeltaChunk
    | ToolCallDeltaChunk
    | BlockEndChunk
    | UsageChunk
    | FinishChunk
)
"""A closed union: the assembler rejects anything else (SPEC §2.2)."""


@dataclass
class GenerateOptions:
    """One model call. Mutable on purpose: ``agent/request`` listeners may edit it.

    The lists are the caller's to replace or extend; the values in them are shared,
    immutable vocabulary. ``signal`` is the step's abort signal; adapters must
    observe it promptly.
    """

    model: str
    messages: list[Message]
    system: str | None = None
    tools: list[ToolSchema] | None = None
    prefill: list[ContentBlock] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    signal: AbortSignal | None = None


@dataclass
class GenerateResult:
    """An assembled model answer; ``usage`` is None when the provider sent none."""

    message: Message
    finish: FinishReason = field(default_factory=StopFinish)
    usage: TokenUsage | None = None


def text(value: str) -> TextBlock:
    """A text content block."""
    return TextBlock(text=value)


def text_of(content: Iterable[ContentBlock]) -> str:
    """The ``text`` of every text block in ``content``, concatenated; other blocks are skipped."""
    return "".join([block.text for block in content if type(block) is TextBlock])
