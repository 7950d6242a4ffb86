"""``GenerateOptions`` to the DeepSeek chat-completions request body (SPEC §10, request mapping).

The body is plain JSON built in the provider's key order. DeepSeek rules that matter:
an assistant turn that made tool calls carries ``content: ""`` and passes its reasoning
back as ``reasoning_content`` (thinking mode refuses the history otherwise); any other
assistant turn without text carries ``content: null``; a tool result with no text is
sent as ``(no output)``. Images and unknown block types are skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

from dsh.core.errors import LlmError
from dsh.core.llm import ContentBlock, GenerateOptions, Message, ToolSchema

Thinking: TypeAlias = Literal["enabled", "disabled"]
ReasoningEffort: TypeAlias = Literal["high", "max"]

EMPTY_TOOL_RESULT = "(no output)"
"""What a tool result with no text is sent as."""


class WireFunctionCall(TypedDict):
    name: str
    arguments: str


class WireToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: WireFunctionCall


class WireSystemMessage(TypedDict):
    role: Literal["system"]
    content: str


class WireUserMessage(TypedDict):
    role: Literal["user"]
    content: str


class WireAssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None
    reasoning_content: NotRequired[str]
    tool_calls: NotRequired[list[WireToolCall]]


class WireToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    content: str


WireMessage: TypeAlias = WireSystemMessage | WireUserMessage | WireAssistantMessage | WireToolMessage


class WireFunction(TypedDict):
    name: str
    description: str
    parameters: dict[str, Any]
    strict: NotRequired[bool]


class WireTool(TypedDict):
    type: Literal["function"]
    function: WireFunction


class WireThinking(TypedDict):
    type: Thinking


class WireStreamOptions(TypedDict):
    include_usage: bool


class ChatRequest(TypedDict):
    """The request body, keys in wire order."""

    model: str
    messages: list[WireMessage]
    stream: Literal[True]
    stream_options: WireStreamOptions
    thinking: NotRequired[WireThinking]
    reasoning_effort: NotRequired[ReasoningEffort]
    tools: NotRequired[list[WireTool]]
    temperature: NotRequired[float]
    max_tokens: NotRequired[int]
    stop: NotRequired[list[str]]


@dataclass(frozen=True)
class RequestDefaults:
    """Adapter-wide request settings; None leaves the provider's default in force."""

    thinking: Thinking | None = None
    reasoning_effort: ReasoningEffort | None = None


def _text(blocks: Sequence[ContentBlock]) -> str:
    return "".join(block["text"] for block in blocks if block["type"] == "text")


def _reasoning(blocks: Sequence[ContentBlock]) -> str:
    return "".join(block["text"] for block in blocks if block["type"] == "reasoning")


def _assistant(content: Sequence[ContentBlock]) -> WireAssistantMessage:
    text = _text(content)
    calls: list[WireToolCall] = [
        {
            "id": block["id"],
            "type": "function",
            "function": {"name": block["name"], "arguments": block["arguments"]},
        }
        for block in content
        if block["type"] == "tool-call"
    ]
    message: WireAssistantMessage = {"role": "assistant", "content": text if text or calls else None}
    if calls:
        reasoning = _reasoning(content)
        if reasoning:
            message["reasoning_content"] = reasoning
        message["tool_calls"] = calls
    return message


def _user(content: Sequence[ContentBlock]) -> list[WireMessage]:
    text = _text(content)
    results = [block for block in content if block["type"] == "tool-result"]
    wire: list[WireMessage] = []
    if text or not results:
        wire.append({"role": "user", "content": text})
    for result in results:
        output = _text(result["content"])
        wire.append({"role": "tool", "tool_call_id": result["toolCallId"], "content": output or EMPTY_TOOL_RESULT})
    return wire


def serialize_message(message: Message) -> list[WireMessage]:
    """The wire messages one history message becomes (at least one).

    A system or assistant message becomes one wire message; a user message becomes its
    text (only if it has any, or if it has no tool results) followed by one
    ``role: "tool"`` message per tool result, in order. Any role other than ``system``
    and ``assistant`` is mapped as a user message. The result depends on the message's
    content alone, which is what lets :class:`~dsh.adapters.deepseek.encode.RequestEncoder`
    reuse the encoding of an equal message.
    """
    role = message["role"]
    if role == "system":
        return [{"role": "system", "content": _text(message["content"])}]
    if role == "assistant":
        return [_assistant(message["content"])]
    return _user(message["content"])


def serialize_messages(messages: Sequence[Message]) -> list[WireMessage]:
    """The wire ``messages`` for a conversation (the system prompt option is not included).

    Text blocks are concatenated with no separator; each message maps as
    :func:`serialize_message` says, in order.
    """
    wire: list[WireMessage] = []
    for message in messages:
        wire += serialize_message(message)
    return wire


def _tool(schema: ToolSchema) -> WireTool:
    function: WireFunction = {
        "name": schema["name"],
        "description": schema["description"],
        "parameters": schema["parameters"],
    }
    if "strict" in schema:
        function["strict"] = schema["strict"]
    return {"type": "function", "function": function}


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
    settings = defaults if defaults is not None else RequestDefaults()
    messages: list[WireMessage] = []
    if options.system is not None:
        messages.append({"role": "system", "content": options.system})
    messages.extend(serialize_messages(options.messages))
    body: ChatRequest = {
        "model": options.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if settings.thinking is not None:
        body["thinking"] = {"type": settings.thinking}
    if settings.reasoning_effort is not None:
        body["reasoning_effort"] = settings.reasoning_effort
    if options.tools:
        body["tools"] = [_tool(schema) for schema in options.tools]
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.max_tokens is not None:
        body["max_tokens"] = options.max_tokens
    if options.stop is not None:
        body["stop"] = options.stop
    return body
