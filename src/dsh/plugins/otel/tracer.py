"""GenAiTracer: OpenTelemetry spans of turns, model requests and tool calls.

The spans (names and attributes of the GenAI semantic conventions):

* ``invoke_agent {agent id}`` per turn, from ``agent/turn-start`` to ``agent/turn-end``
  (``gen_ai.operation.name=invoke_agent``, ``gen_ai.agent.name`` / ``gen_ai.agent.id``
  the agent id, ``gen_ai.conversation.id`` the session id, ``dsh.turn``; at the end
  ``dsh.turn.end_reason``, and ``error.type`` with an error status when the turn failed);
* ``chat {model}`` per model request, a child of its turn: opened when the
  ``agent/request`` waterfall has produced the final request, closed when the answer is
  assembled (``agent/step-result``) with ``gen_ai.usage.*`` and
  ``gen_ai.response.finish_reasons`` read from the step's last logged chunks, or by
  ``agent/request-error`` with ``error.type`` (a retry the policy grants opens the next
  ``chat`` span). A request cut off otherwise (a cancel, a failure outside the model
  call) ends with the step, closed with ``error.type`` once the turn's outcome is known;
* ``execute_tool {tool}`` per tool call, a child of its turn, around the whole
  ``tools/execute`` chain (``gen_ai.tool.name``, ``gen_ai.tool.call.id``; ``error.type``
  when the result is an error). The span is the current span while the tool runs.

Parenting across agents: a turn of a session whose header names a ``parent_session``
(a sub-agent) is a child of that session's open tool span in this process: the one
whose call id is the header's ``parent_call_id`` when it has one, else the newest. A
turn with no such parent is a child of the current span of the context the agent's
task runs in (an agent started inside a tool call is under that call), else a root.

Content (prompts, answers, system prompt, tool arguments and results) is recorded only
when ``capture`` is set. Nothing runs per streamed chunk: the listeners are the
per-turn, per-request and per-tool events only. Every open span is ended when its agent
goes idle or is disposed, so a turn that closed without ``agent/turn-end`` (a failed
boundary listener) still ends, with the reason its log holds.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.context import Context as OtelContext
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from dsh.core.agent import Agent, AgentStatus, RequestFailure
from dsh.core.errors import error_code
from dsh.core.llm import FinishChunk, GenerateOptions, Message, TokenUsage, UsageChunk, variant_tag
from dsh.core.redact import redact_secrets
from dsh.core.session import (
    AssistantChunkEvent,
    Session,
    SessionHeader,
    ToolErrorInfo,
    TurnEndEvent,
    TurnEndReason,
)
from dsh.core.tools import ToolExecution, ToolExecutionResult
from dsh.plugins.otel.content import (
    finish_name,
    input_messages,
    output_messages,
    system_instructions,
    text_of,
    to_json,
)

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
ERROR_TYPE = "error.type"

TAIL_SCAN = 64
"""How many trailing chunk events are searched for a request's usage and finish."""

LOG_SCAN = 64
"""How many trailing events are searched for a turn's logged ``turn/end``."""


@dataclass(slots=True)
class _Track:
    """The open spans of one session's open turn."""

    session_id: str
    turn: int
    turn_span: Span
    chat: Span | None = None
    chat_end_ns: int | None = None
    tools: dict[str, Span] = field(default_factory=dict)


def _error_status(span: Span, kind: str, message: str | None = None) -> None:
    span.set_attribute(ERROR_TYPE, kind)
    span.set_status(Status(StatusCode.ERROR, message))


def logged_reason(session: Session, turn: int) -> TurnEndReason | None:
    """The reason of ``turn``'s ``turn/end`` among the session's last events, or None."""
    events = session.events
    for index in range(len(events) - 1, max(-1, len(events) - 1 - LOG_SCAN), -1):
        event = events[index]
        if type(event) is TurnEndEvent and event.data.turn == turn:
            return event.data.reason
    return None


def request_tail(session: Session) -> tuple[TokenUsage | None, str | None]:
    """The usage and finish reason of the request whose chunks end the log (None when absent).

    Only the last :data:`TAIL_SCAN` events are read, and only while they are chunks.
    """
    usage: TokenUsage | None = None
    finish: str | None = None
    events = session.events
    for index in range(len(events) - 1, max(-1, len(events) - 1 - TAIL_SCAN), -1):
        event = events[index]
        if type(event) is not AssistantChunkEvent:
            break
        chunk = event.data.chunk
        if type(chunk) is FinishChunk and finish is None:
            finish = finish_name(chunk.reason)
        elif type(chunk) is UsageChunk and usage is None:
            usage = chunk.usage
    return usage, finish


def usage_attributes(usage: TokenUsage | None) -> dict[str, int]:
    """``gen_ai.usage.*`` of ``usage`` (none for None); input tokens include the cached ones, as the conventions say."""
    if usage is None:
        return {}
    read = usage.cache_read_tokens if isinstance(usage.cache_read_tokens, int) else 0
    write = usage.cache_write_tokens if isinstance(usage.cache_write_tokens, int) else 0
    attributes = {
        "gen_ai.usage.input_tokens": usage.input_tokens + read + write,
        "gen_ai.usage.output_tokens": usage.output_tokens,
    }
    if isinstance(usage.cache_read_tokens, int):
        attributes["gen_ai.usage.cache_read.input_tokens"] = read
    if isinstance(usage.cache_write_tokens, int):
        attributes["gen_ai.usage.cache_creation.input_tokens"] = write
    if isinstance(usage.reasoning_tokens, int):
        attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    return attributes


class GenAiTracer:
    """The span bookkeeping behind the ``otel`` plugin's listeners (see the module docstring).

    Owns no task; holds the open spans of each session until they end. ``tracer`` is
    where spans start; ``provider_name`` is ``gen_ai.provider.name``.
    """

    def __init__(self, tracer: Tracer, *, provider_name: str, capture: bool) -> None:
        self.tracer = tracer
        self.provider_name = provider_name
        self.capture = capture
        self.tracks: dict[str, _Track] = {}

    def _parent(self, header: SessionHeader) -> OtelContext | None:
        """The context of the open tool span that started this sub-agent, or None (the current context)."""
        parent = header.parent_session
        track = self.tracks.get(parent) if isinstance(parent, str) else None
        if track is None or not track.tools:
            return None
        return trace.set_span_in_context(next(reversed(track.tools.values())))

    def close(self) -> None:
        """End every span still open (the plugin is unloading)."""
        for track in list(self.tracks.values()):
            for span in track.tools.values():
                span.end()
            self._close_turn(track, None)

    # ------------------------------------------------------------------ turns
    def turn_start(self, agent: Agent, turn: int) -> None:
        """``agent/turn-start``: open the turn's ``invoke_agent`` span (ending a stale one first)."""
        session = agent.session
        stale = self.tracks.get(session.id)
        if stale is not None:
            self._close_turn(stale, logged_reason(session, stale.turn))
        attributes: dict[str, str | int] = {
            OPERATION: "invoke_agent",
            PROVIDER: self.provider_name,
            "gen_ai.agent.name": agent.id,
            "gen_ai.agent.id": agent.id,
            "gen_ai.conversation.id": session.id,
            "dsh.turn": turn,
        }
        if agent.options.model:
            attributes["gen_ai.request.model"] = agent.options.model
        if isinstance(session.header.parent_session, str):
            attributes["dsh.parent_session"] = session.header.parent_session
        span = self.tracer.start_span(
            f"invoke_agent {agent.id}", context=self._parent(session.header), attributes=attributes
        )
        self.tracks[session.id] = _Track(session.id, turn, span)

    def turn_end(self, agent: Agent, turn: int, reason: TurnEndReason) -> None:
        """``agent/turn-end``: close the turn's span with ``reason``."""
        track = self.tracks.get(agent.session.id)
        if track is not None:
            self._close_turn(track, reason)

    def status(self, agent: Agent, status: AgentStatus) -> None:
        """``agent/status``: an agent idle or disposed has no turn running; end one still open."""
        track = self.tracks.get(agent.session.id) if status != "running" else None
        if track is not None:
            self._close_turn(track, logged_reason(agent.session, track.turn))

    def error(self, agent: Agent, turn: int, step: int, error: BaseException) -> None:
        """``agent/error``: fail the open request and mark the open turn as failed (it ends later)."""
        track = self.tracks.get(agent.session.id)
        if track is None:
            return
        kind = error_code(error) or type(error).__name__
        message = redact_secrets(str(error))
        self._end_chat(track, kind, message)
        _error_status(track.turn_span, kind, message)

    def _close_turn(self, track: _Track, reason: TurnEndReason | None) -> None:
        """End the turn's spans; ``reason`` None: unknown (the plugin is unloading, or the log holds none)."""
        del self.tracks[track.session_id]
        kind = variant_tag(reason) if reason is not None else None
        self._end_chat(track, kind or "interrupted", None)
        if kind is not None:
            track.turn_span.set_attribute("dsh.turn.end_reason", kind)
        track.turn_span.end()

    # --------------------------------------------------------------- requests
    def _start_chat(self, track: _Track, request: GenerateOptions) -> None:
        attributes: dict[str, str] = {
            OPERATION: "chat",
            PROVIDER: self.provider_name,
            "gen_ai.request.model": request.model,
            "gen_ai.conversation.id": track.session_id,
        }
        if self.capture:
            attributes["gen_ai.input.messages"] = input_messages(request.messages)
            if request.system:
                attributes["gen_ai.system_instructions"] = system_instructions(request.system)
        track.chat = self.tracer.start_span(
            f"chat {request.model}",
            context=trace.set_span_in_context(track.turn_span),
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        track.chat_end_ns = None

    def _end_chat(self, track: _Track, kind: str | None, message: str | None) -> None:
        """End the open request span (if any), failed with ``kind`` unless it is None."""
        span = track.chat
        if span is None:
            return
        track.chat = None
        if kind is not None:
            _error_status(span, kind, message)
        span.end(end_time=track.chat_end_ns)

    async def request(
        self,
        agent: Agent,
        turn: int,
        step: int,
        options: GenerateOptions,
        next: Callable[[], Awaitable[GenerateOptions]],
    ) -> GenerateOptions:
        """``agent/request`` (outermost): open the ``chat`` span of the final request."""
        request = await next()
        track = self.tracks.get(agent.session.id)
        if track is not None:
            self._start_chat(track, request)
        return request

    async def request_error(
        self, agent: Agent, turn: int, step: int, failure: RequestFailure, next: Callable[[], Awaitable[bool]]
    ) -> bool:
        """``agent/request-error`` (outermost): fail the request's span; a granted retry opens the next one."""
        track = self.tracks.get(agent.session.id)
        if track is not None:
            self._end_chat(track, failure.error.code, redact_secrets(str(failure.error)))
        retry = await next()
        if retry and track is not None:
            self._start_chat(track, failure.request)
        return retry

    async def step_result(
        self, agent: Agent, turn: int, step: int, message: Message, next: Callable[[], Awaitable[Message]]
    ) -> Message:
        """``agent/step-result`` (outermost): the answer is in; close the request's span."""
        end_ns = time.time_ns()
        result = await next()
        track = self.tracks.get(agent.session.id)
        span = track.chat if track is not None else None
        if track is not None and span is not None:
            usage, finish = request_tail(agent.session)
            span.set_attributes(usage_attributes(usage))
            span.set_attribute("gen_ai.response.finish_reasons", () if finish is None else (finish,))
            if self.capture:
                span.set_attribute("gen_ai.output.messages", output_messages(result, finish))
            track.chat_end_ns = end_ns
            self._end_chat(track, None, None)
        return result

    def step_end(self, agent: Agent, turn: int, step: int) -> None:
        """``agent/step-end``: a request still open was cut off; it ends here, its outcome set later."""
        track = self.tracks.get(agent.session.id)
        if track is not None and track.chat is not None:
            track.chat_end_ns = time.time_ns()

    # ------------------------------------------------------------------ tools
    async def execute(
        self, execution: ToolExecution, next: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        """``tools/execute`` (outermost): one ``execute_tool`` span around the call, current while it runs."""
        agent = execution.agent
        track = self.tracks.get(agent.session.id) if isinstance(agent, Agent) else None
        attributes: dict[str, str] = {
            OPERATION: "execute_tool",
            "gen_ai.tool.name": execution.name,
            "gen_ai.tool.call.id": execution.call_id,
            "gen_ai.tool.type": "function",
        }
        if self.capture:
            arguments = execution.arguments
            attributes["gen_ai.tool.call.arguments"] = arguments if isinstance(arguments, str) else to_json(arguments)
        span = self.tracer.start_span(
            f"execute_tool {execution.name}",
            context=trace.set_span_in_context(track.turn_span) if track is not None else None,
            attributes=attributes,
        )
        if track is not None:
            track.tools[execution.call_id] = span
        result: ToolExecutionResult | None = None
        try:
            with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                result = await next()
        finally:
            if track is not None:
                track.tools.pop(execution.call_id, None)
            self._end_tool(span, result)
        return result

    def _end_tool(self, span: Span, result: ToolExecutionResult | None) -> None:
        if not span.is_recording():  # ended already: the plugin was unloaded during the call
            return
        if result is None:
            _error_status(span, "cancelled")
        elif result.is_error:
            code = result.error.code if isinstance(result.error, ToolErrorInfo) else "tool_error"
            _error_status(span, code, text_of(result.content)[:200])
        if result is not None and self.capture:
            span.set_attribute("gen_ai.tool.call.result", text_of(result.content))
        span.end()
