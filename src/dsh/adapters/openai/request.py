"""``GenerateOptions`` to the arguments of one streaming ``chat.completions.create`` call.

The conversation maps the way OpenAI-compatible providers with thinking models expect
it (DeepSeek's rules, which other endpoints accept too):

* ``options.system`` becomes a leading ``system`` message; system messages in the
  history stay ``system`` messages;
* an assistant turn carries its text; one that made tool calls carries ``content: ""``,
  its calls with their *original* raw argument strings (even invalid JSON) and its
  reasoning as ``reasoning_content`` (thinking mode refuses the history otherwise);
  any other assistant turn without text carries ``content: None``;
* a user message becomes its text (only when it has some, or has no tool results)
  followed by one ``role: "tool"`` message per tool result (empty results are sent as
  ``(no output)``);
* images and blocks this version does not know (``Unknown``) are skipped; text blocks are
  concatenated with no separator.

Provider fields the SDK does not model (``reasoning_content`` in history, ``thinking``,
``reasoning_effort: "max"``) ride along: extra keys of message dicts are forwarded by
the SDK as they are, and the request-level ones go through ``extra_body``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.shared_params import FunctionDefinition

from dsh.core.errors import LlmError
from dsh.core.llm import (
    UNSET,
    ContentBlock,
    GenerateOptions,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)

Reasoning: TypeAlias = Literal["off", "high", "xhigh"]
"""The ``reasoning`` setting: ``off`` disables thinking; ``high`` / ``xhigh`` set its effort."""

EMPTY_TOOL_RESULT = "(no output)"
"""What a tool result without text is sent as."""

_EFFORT: dict[str, str] = {"high": "high", "xhigh": "max"}


class ChatFunctionCall(TypedDict):
    name: str
    arguments: str


class ChatToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: ChatFunctionCall


class ChatSystemMessage(TypedDict):
    role: Literal["system"]
    content: str


class ChatUserMessage(TypedDict):
    role: Literal["user"]
    content: str


class ChatAssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None
    reasoning_content: NotRequired[str]
    tool_calls: NotRequired[list[ChatToolCall]]


class ChatToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    content: str


ChatMessage: TypeAlias = ChatSystemMessage | ChatUserMessage | ChatAssistantMessage | ChatToolMessage


@dataclass(frozen=True)
class ChatRequest:
    """What one streaming call sends; None fields are left out of the request.

    ``extra_body`` holds the provider fields the SDK has no parameter for; the SDK
    merges them into the JSON body.
    """

    model: str
    messages: list[ChatMessage]
    tools: list[ChatCompletionFunctionToolParam] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)


def reasoning_fields(reasoning: Reasoning | None) -> dict[str, Any]:
    """The request fields that select thinking mode.

    None (the provider default) enables thinking without an effort; ``off`` disables
    it; ``high`` enables it with effort ``high``; ``xhigh`` with effort ``max``.
    """
    if reasoning == "off":
        return {"thinking": {"type": "disabled"}}
    fields: dict[str, Any] = {"thinking": {"type": "enabled"}}
    if reasoning is not None:
        fields["reasoning_effort"] = _EFFORT[reasoning]
    return fields


def _text(blocks: Sequence[ContentBlock]) -> str:
    return "".join([block.text for block in blocks if type(block) is TextBlock])


def _reasoning(blocks: Sequence[ContentBlock]) -> str:
    return "".join([block.text for block in blocks if type(block) is ReasoningBlock])


def _assistant(content: Sequence[ContentBlock]) -> ChatAssistantMessage:
    text = _text(content)
    calls: list[ChatToolCall] = []
    for block in content:
        if type(block) is ToolCallBlock:
            function: ChatFunctionCall = {"name": block.name, "arguments": block.arguments}
            calls.append({"id": block.id, "type": "function", "function": function})
    if not calls:
        return {"role": "assistant", "content": text if text else None}
    message: ChatAssistantMessage = {"role": "assistant", "content": text}
    reasoning = _reasoning(content)
    if reasoning:
        message["reasoning_content"] = reasoning
    message["tool_calls"] = calls
    return message


def _user(content: Sequence[ContentBlock]) -> list[ChatMessage]:
    text = _text(content)
    chat: list[ChatMessage] = []
    results = [block for block in content if type(block) is ToolResultBlock]
    if text or not results:
        chat.append({"role": "user", "content": text})
    for result in results:
        output = _text(result.content)
        chat.append({"role": "tool", "tool_call_id": result.tool_call_id, "content": output or EMPTY_TOOL_RESULT})
    return chat


def to_chat_messages(messages: Sequence[Message]) -> list[ChatMessage]:
    """The chat messages for a conversation (without ``options.system``); see the module docstring."""
    chat: list[ChatMessage] = []
    for message in messages:
        role = message.role
        if role == "system":
            chat.append({"role": "system", "content": _text(message.content)})
        elif role == "assistant":
            chat.append(_assistant(message.content))
        else:
            chat.extend(_user(message.content))
    return chat


def to_chat_tool(schema: ToolSchema) -> ChatCompletionFunctionToolParam:
    """A function tool; ``strict`` is sent exactly as given and left out when the schema has none."""
    function: FunctionDefinition = {
        "name": schema.name,
        "description": schema.description,
        "parameters": schema.parameters,
    }
    if schema.strict is not UNSET:
        function["strict"] = schema.strict
    return {"type": "function", "function": function}


def build_request(options: GenerateOptions, reasoning: Reasoning | None = None) -> ChatRequest:
    """The call for ``options`` with the adapter's ``reasoning`` setting.

    An empty ``tools`` list is left out. Raises ``LlmError`` code ``UNSUPPORTED`` when
    ``options.prefill`` is set (even to an empty list): chat completions have no prefill.
    """
    if options.prefill is not None:
        raise LlmError("prefill is not supported by the llm-openai adapter", "UNSUPPORTED")
    messages: list[ChatMessage] = []
    if options.system is not None:
        messages.append({"role": "system", "content": options.system})
    messages.extend(to_chat_messages(options.messages))
    return ChatRequest(
        model=options.model,
        messages=messages,
        tools=[to_chat_tool(schema) for schema in options.tools] if options.tools else None,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        stop=list(options.stop) if options.stop is not None else None,
        extra_body=reasoning_fields(reasoning),
    )
