"""``GenerateOptions`` to the DeepSeek chat-completions request body (SPEC §10, request mapping).

The body is a tree of frozen ``msgspec.Struct`` values whose fields are declared in the
provider's key order, so :func:`encode_request` is one C-speed ``msgspec`` encode: compact
JSON, non-ASCII kept as is, absent (``UNSET``) fields left out. DeepSeek rules that
matter: an assistant turn that made tool calls carries ``content: ""`` and passes its
reasoning back as ``reasoning_content`` (thinking mode refuses the history otherwise);
any other assistant turn without text carries ``content: null``; a tool result with no
text is sent as ``(no output)``. Images and blocks this version does not know
(``Unknown``) are skipped.

The body is built from the typed history on every call, without a cache: the values
are immutable and shared, so there is nothing to copy, and the whole map-and-encode of a
50-message history costs about as much as looking the old cache up did. The bytes are
those ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))`` wrote for the same
values, except that a float in exponent form is spelled the shortest way (``1e-05`` is
sent as ``0.00001``: the same number).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from msgspec import UNSET, Struct, UnsetType

from dsh.core.errors import LlmError
from dsh.core.llm import (
    ContentBlock,
    GenerateOptions,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    encode,
)

Thinking: TypeAlias = Literal["enabled", "disabled"]
ReasoningEffort: TypeAlias = Literal["high", "max"]

EMPTY_TOOL_RESULT = "(no output)"
"""What a tool result with no text is sent as."""


class WireFunctionCall(Struct, frozen=True):
    name: str
    arguments: str


class WireToolCall(Struct, frozen=True, kw_only=True):
    id: str
    type: Literal["function"] = "function"
    function: WireFunctionCall


class WireTextMessage(Struct, frozen=True):
    """A system or user message: its text."""

    role: Literal["system", "user"]
    content: str


class WireAssistantMessage(Struct, frozen=True):
    role: Literal["assistant"]
    content: str | None
    reasoning_content: str | UnsetType = UNSET
    tool_calls: list[WireToolCall] | UnsetType = UNSET


class WireToolMessage(Struct, frozen=True):
    role: Literal["tool"]
    tool_call_id: str
    content: str


WireMessage: TypeAlias = WireTextMessage | WireAssistantMessage | WireToolMessage


class WireFunction(Struct, frozen=True):
    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool | UnsetType = UNSET


class WireTool(Struct, frozen=True, kw_only=True):
    type: Literal["function"] = "function"
    function: WireFunction


class WireThinking(Struct, frozen=True):
    type: Thinking


class WireStreamOptions(Struct, frozen=True):
    include_usage: bool


_INCLUDE_USAGE = WireStreamOptions(include_usage=True)


class ChatRequest(Struct, frozen=True, kw_only=True):
    """The request body, fields in wire order; ``UNSET`` fields are not sent."""

    model: str
    messages: list[WireMessage]
    stream: Literal[True] = True
    stream_options: WireStreamOptions = _INCLUDE_USAGE
    thinking: WireThinking | UnsetType = UNSET
    reasoning_effort: ReasoningEffort | UnsetType = UNSET
    tools: list[WireTool] | UnsetType = UNSET
    temperature: float | UnsetType = UNSET
    max_tokens: int | UnsetType = UNSET
    stop: list[str] | UnsetType = UNSET


@dataclass(frozen=True)
class RequestDefaults:
    """Adapter-wide request settings; None leaves the provider's default in force."""

    thinking: Thinking | None = None
    reasoning_effort: ReasoningEffort | None = None


def _text(blocks: Sequence[ContentBlock]) -> str:
    if len(blocks) == 1:  # the usual shape: one text block
        block = blocks[0]
        return block.text if type(block) is TextBlock else ""
    return "".join([block.text for block in blocks if type(block) is TextBlock])


def _assistant(content: Sequence[ContentBlock]) -> WireAssistantMessage:
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[WireToolCall] = []
    for block in content:
        if type(block) is TextBlock:
            texts.append(block.text)
        elif type(block) is ToolCallBlock:
            calls.append(WireToolCall(id=block.id, function=WireFunctionCall(block.name, block.arguments)))
        elif type(block) is ReasoningBlock:
            reasoning.append(block.text)
    text = "".join(texts)
    if not calls:
        return WireAssistantMessage("assistant", text if text else None)
    return WireAssistantMessage("assistant", text, "".join(reasoning) or UNSET, calls)


def _user(content: Sequence[ContentBlock], wire: list[WireMessage]) -> None:
    texts: list[str] = []
    results: list[WireMessage] = []
    for block in content:
        if type(block) is TextBlock:
            texts.append(block.text)
        elif type(block) is ToolResultBlock:
            results.append(WireToolMessage("tool", block.tool_call_id, _text(block.content) or EMPTY_TOOL_RESULT))
    text = "".join(texts)
    if text or not results:
        wire.append(WireTextMessage("user", text))
    wire += results


def serialize_message(message: Message) -> list[WireMessage]:
    """The wire messages one history message becomes (at least one).

    A system or assistant message becomes one wire message; a user message becomes its
    text (only if it has any, or if it has no tool results) followed by one
    ``role: "tool"`` message per tool result, in order. Any role other than ``system``
    and ``assistant`` is mapped as a user message.
    """
    wire: list[WireMessage] = []
    _append(message, wire)
    return wire


def _append(message: Message, wire: list[WireMessage]) -> None:
    role = message.role
    if role == "assistant":
        wire.append(_assistant(message.content))
    elif role == "system":
        wire.append(WireTextMessage("system", _text(message.content)))
    else:
        _user(message.content, wire)


def serialize_messages(messages: Sequence[Message]) -> list[WireMessage]:
    """The wire ``messages`` for a conversation (the system prompt option is not included).

    Text blocks are concatenated with no separator; each message maps as
    :func:`serialize_message` says, in order.
    """
    wire: list[WireMessage] = []
    for message in messages:
        _append(message, wire)
    return wire


def _tool(schema: ToolSchema) -> WireTool:
    return WireTool(function=WireFunction(schema.name, schema.description, schema.parameters, schema.strict))


def serialize_request(options: GenerateOptions, defaults: RequestDefaults | None = None) -> ChatRequest:
    """The streaming request body for ``options``.

    Keys in order: ``model``, ``messages``, ``stream``, ``stream_options``, then
    ``thinking`` and ``reasoning_effort`` (only when configured), ``tools`` (only when
    non-empty), ``temperature``, ``max_tokens``, ``stop`` (each only when set).
    Raises ``LlmError`` code ``UNSUPPORTED`` when ``options.prefill`` is set (even empty).
    """
    if options.prefill is not None:
        raise LlmError(
            "prefill is not supported by the DeepSeek adapter (Beta chat-prefix completion is future work)",
            "UNSUPPORTED",
        )
    settings = defaults if defaults is not None else _NO_DEFAULTS
    messages: list[WireMessage] = []
    if options.system is not None:
        messages.append(WireTextMessage("system", options.system))
    for message in options.messages:
        _append(message, messages)
    return ChatRequest(
        model=options.model,
        messages=messages,
        thinking=WireThinking(settings.thinking) if settings.thinking is not None else UNSET,
        reasoning_effort=settings.reasoning_effort if settings.reasoning_effort is not None else UNSET,
        tools=[_tool(schema) for schema in options.tools] if options.tools else UNSET,
        temperature=options.temperature if options.temperature is not None else UNSET,
        max_tokens=options.max_tokens if options.max_tokens is not None else UNSET,
        stop=options.stop if options.stop is not None else UNSET,
    )


_NO_DEFAULTS = RequestDefaults()


def encode_request(options: GenerateOptions, defaults: RequestDefaults | None = None) -> bytes:
    """The UTF-8 JSON request body for ``options``: ``serialize_request(options, defaults)`` encoded.

    Raises what :func:`serialize_request` raises, and ``UnicodeEncodeError`` for a
    string holding a lone surrogate (it has no UTF-8 form).
    """
    return encode(serialize_request(options, defaults))
