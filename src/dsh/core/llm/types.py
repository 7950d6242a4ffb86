"""The provider-neutral vocabulary every plugin speaks (SPEC §2.1-2.2).

Content blocks, messages, sources, finish reasons, usage and stream chunks are JSON
on disk and on the wire, so they are modelled as ``TypedDict``: the Python value *is*
the JSON value, keys keep their wire names (``toolCallId``) and construction order,
and nothing is converted on the hot path. Values coming from outside (a file, a
socket) are checked at that edge with the pydantic adapters in :mod:`.validate`.

The unions are merge-extensible: code that switches over ``type`` or ``kind`` must
fall through for a variant it does not know (SPEC §0.6). Only ``StreamChunk`` is a
closed union inside the assembler.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypeAlias

from typing_extensions import TypedDict

from dsh.kernel import AbortSignal

CallId: TypeAlias = str
Role: TypeAlias = Literal["system", "user", "assistant"]


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str
    cache: NotRequired[Literal["ephemeral"]]


class ReasoningBlock(TypedDict):
    type: Literal["reasoning"]
    text: str


class ToolCallBlock(TypedDict):
    type: Literal["tool-call"]
    id: CallId
    name: str
    arguments: str


class ToolResultBlock(TypedDict):
    type: Literal["tool-result"]
    toolCallId: CallId
    content: list["ContentBlock"]
    isError: NotRequired[bool]
    cache: NotRequired[Literal["ephemeral"]]


class ImageBlock(TypedDict):
    type: Literal["image"]
    url: str
    mimeType: NotRequired[str]
    cache: NotRequired[Literal["ephemeral"]]


ContentBlock: TypeAlias = TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock | ImageBlock


class Message(TypedDict):
    role: Role
    content: list[ContentBlock]


class UserSource(TypedDict):
    kind: Literal["user"]


class PluginSource(TypedDict):
    kind: Literal["plugin"]
    plugin: str


class AgentSource(TypedDict):
    kind: Literal["agent"]
    agentId: str


MessageSource: TypeAlias = UserSource | PluginSource | AgentSource


class StopFinish(TypedDict):
    kind: Literal["stop"]


class ToolCallsFinish(TypedDict):
    kind: Literal["tool-calls"]


class MaxTokensFinish(TypedDict):
    kind: Literal["max-tokens"]


class AbortedFinish(TypedDict):
    kind: Literal["aborted"]


class ErrorFinish(TypedDict):
    kind: Literal["error"]
    message: str
    code: NotRequired[str]


FinishReason: TypeAlias = StopFinish | ToolCallsFinish | MaxTokensFinish | AbortedFinish | ErrorFinish


class TokenUsage(TypedDict):
    """Disjoint token counts: billed input = input + cacheRead + cacheWrite."""

    inputTokens: int
    outputTokens: int
    cacheReadTokens: NotRequired[int]
    cacheWriteTokens: NotRequired[int]
    reasoningTokens: NotRequired[int]


class ToolSchema(TypedDict):
    name: str
    description: str
    parameters: dict[str, Any]
    strict: NotRequired[bool]


class BlockStartChunk(TypedDict):
    type: Literal["block-start"]
    index: int
    blockType: str


class TextDeltaChunk(TypedDict):
    type: Literal["text-delta"]
    index: int
    text: str


class ReasoningDeltaChunk(TypedDict):
    type: Literal["reasoning-delta"]
    index: int
    text: str


class ToolCallDeltaChunk(TypedDict):
    type: Literal["tool-call-delta"]
    index: int
    id: CallId
    name: NotRequired[str]
    argumentsDelta: str


class BlockEndChunk(TypedDict):
    type: Literal["block-end"]
    index: int
    block: ContentBlock


class UsageChunk(TypedDict):
    type: Literal["usage"]
    usage: TokenUsage


class FinishChunk(TypedDict):
    type: Literal["finish"]
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


@dataclass
class GenerateOptions:
    """One model call. Mutable on purpose: ``agent/request`` listeners may edit it.

    ``signal`` is the step's abort signal; adapters must observe it promptly.
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
    finish: FinishReason = field(default_factory=lambda: StopFinish(kind="stop"))
    usage: TokenUsage | None = None


def text(value: str) -> TextBlock:
    """A text content block."""
    return {"type": "text", "text": value}


def text_of(content: Iterable[Mapping[str, Any]]) -> str:
    """The ``text`` of every text block in ``content``, concatenated; other blocks are skipped."""
    return "".join(block["text"] for block in content if block.get("type") == "text")
