"""The otel plugin's span tree for scripted turns through the wire test server and the real DeepSeek adapter."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from dsh.adapters import deepseek
from dsh.agent_loop import ReactLoopAgent
from dsh.core.agent import AGENT_TURN_START, Agent, AgentOptions, CreateAgentOptions
from dsh.core.llm import TextBlock
from dsh.core.session import SessionMeta
from dsh.core.tools import ToolExecution, tool_from_function
from dsh.plugins import llm_retry
from dsh.plugins.otel import plugin as otel
from dsh.plugins.otel.tracer import GenAiTracer
from dsh.testing.harness import Harness
from dsh.testing.wire import (
    Finish,
    Reply,
    TextDelta,
    Usage,
    WireServer,
    api_error,
    text_reply,
    tool_call,
)

WIRE = "wire-model"


async def echo(text: str) -> str:
    """Say ``text`` back."""
    return f"echo: {text}"


async def broken(text: str) -> str:
    """Always fails."""
    raise RuntimeError(f"cannot {text}")


def tool_reply(call_id: str, name: str, arguments: str, usage: Usage | None = None) -> Reply:
    return Reply([*tool_call(0, call_id, name, arguments), Finish("tool_calls", usage)])


@asynccontextmanager
async def traced(server: WireServer, **config: object) -> AsyncIterator[Harness]:
    """The full stack, the DeepSeek adapter on ``server`` and the otel plugin (``config``)."""
    async with Harness() as h:
        await h.ctx.plugin(deepseek, {"models": [WIRE], "baseURL": server.base_url, "apiKey": "sk-test"})
        await h.ctx.plugin(otel, config)
        h.tools.register(tool_from_function(echo))
        h.tools.register(tool_from_function(broken))
        yield h


async def run_turn(agent: Agent, text: str = "hi") -> None:
    agent.send((TextBlock(text=text),))
    await agent.when_idle()


def by_name(spans: Sequence[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


async def test_a_tool_turn_is_an_invoke_agent_span_over_its_chat_and_tool_spans(
    exporter: InMemorySpanExporter,
) -> None:
    script = [
        tool_reply("call-1", "echo", '{"text":"hi"}', Usage(10, 5, cached_tokens=4)),
        text_reply("done", usage=Usage(20, 3, reasoning_tokens=1)),
    ]
    async with WireServer(script) as server, traced(server) as h:
        agent = h.agent(model=WIRE)
        await run_turn(agent)
        session_id = agent.session.id
    spans = exporter.get_finished_spans()
    named = by_name(spans)
    (turn,) = named["invoke_agent main"]
    first, second = sorted(named[f"chat {WIRE}"], key=lambda span: span.start_time or 0)
    (tool,) = named["execute_tool echo"]
    assert parent_of(turn) is None
    assert [parent_of(span) for span in (first, tool, second)] == [span_id(turn)] * 3
    assert dict(turn.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "deepseek",
        "gen_ai.agent.name": "main",
        "gen_ai.agent.id": "main",
        "gen_ai.conversation.id": session_id,
        "gen_ai.request.model": WIRE,
        "dsh.turn": 1,
        "dsh.turn.end_reason": "completed",
    }
    assert turn.status.status_code is StatusCode.UNSET
    assert dict(first.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "deepseek",
        "gen_ai.request.model": WIRE,
        "gen_ai.conversation.id": session_id,
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.usage.cache_read.input_tokens": 4,
        "gen_ai.response.finish_reasons": ("tool_calls",),
    }
    assert first.kind is trace.SpanKind.CLIENT
    assert (second.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    assert (second.attributes or {})["gen_ai.usage.reasoning.output_tokens"] == 1
    assert dict(tool.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "echo",
        "gen_ai.tool.call.id": "call-1",
        "gen_ai.tool.type": "function",
    }
    assert tool.status.status_code is StatusCode.UNSET
    assert first.end_time is not None
    assert tool.start_time is not None
    assert first.end_time <= tool.start_time
    assert not any(key.startswith(("gen_ai.input", "gen_ai.output")) for span in spans for key in span.attributes or {})


async def test_content_capture_records_prompts_answers_and_tool_arguments(exporter: InMemorySpanExporter) -> None:
    script = [tool_reply("call-1", "echo", '{"text":"héllo"}'), text_reply("dóne")]
    async with WireServer(script) as server, traced(server, captureContent=True) as h:
        await run_turn(h.agent(model=WIRE, system_prompt="be brief"), "say héllo")
    named = by_name(exporter.get_finished_spans())
    first, second = sorted(named[f"chat {WIRE}"], key=lambda span: span.start_time or 0)
    first_attributes = first.attributes or {}
    assert json.loads(str(first_attributes["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "say héllo"}]}
    ]
    assert "be brief" in str(first_attributes["gen_ai.system_instructions"])
    assert json.loads(str(first_attributes["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "call-1", "name": "echo", "arguments": {"text": "héllo"}}],
            "finish_reason": "tool_calls",
        }
    ]
    history = json.loads(str((second.attributes or {})["gen_ai.input.messages"]))
    assert history[-1] == {
        "role": "user",
        "parts": [{"type": "tool_call_response", "id": "call-1", "response": "echo: héllo"}],
    }
    assert json.loads(str((second.attributes or {})["gen_ai.output.messages"]))[0]["parts"] == [
        {"type": "text", "content": "dóne"}
    ]
    (tool,) = named["execute_tool echo"]
    assert (tool.attributes or {})["gen_ai.tool.call.arguments"] == '{"text":"héllo"}'
    assert (tool.attributes or {})["gen_ai.tool.call.result"] == "echo: héllo"


async def test_the_capture_variable_turns_capture_on(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    async with WireServer([text_reply("ok")]) as server, traced(server) as h:
        await run_turn(h.agent(model=WIRE))
    (chat,) = by_name(exporter.get_finished_spans())[f"chat {WIRE}"]
    assert "gen_ai.input.messages" in (chat.attributes or {})


async def test_a_failed_request_fails_its_chat_span_and_the_turn(exporter: InMemorySpanExporter) -> None:
    async with WireServer([api_error(400, "bad request sk-abcdefghijklmnopqrstuv")]) as server, traced(server) as h:
        await run_turn(h.agent(model=WIRE))
    named = by_name(exporter.get_finished_spans())
    (chat,) = named[f"chat {WIRE}"]
    (turn,) = named["invoke_agent main"]
    code = (chat.attributes or {})["error.type"]
    assert isinstance(code, str)
    assert code
    assert chat.status.status_code is StatusCode.ERROR
    assert "sk-abcdefghijklmnopqrstuv" not in (chat.status.description or "")
    assert "gen_ai.response.finish_reasons" not in (chat.attributes or {})
    assert (turn.attributes or {})["error.type"] == code
    assert (turn.attributes or {})["dsh.turn.end_reason"] == "error"
    assert turn.status.status_code is StatusCode.ERROR


async def test_a_retried_request_is_one_failed_and_one_good_chat_span(exporter: InMemorySpanExporter) -> None:
    limited = api_error(429, "slow down", "rate_limit_error", headers=[("retry-after", "0")])
    async with WireServer([limited, text_reply("after all")]) as server, traced(server) as h:
        await h.ctx.plugin(llm_retry, {"baseMs": 0, "capMs": 0})
        await run_turn(h.agent(model=WIRE))
    named = by_name(exporter.get_finished_spans())
    failed, good = sorted(named[f"chat {WIRE}"], key=lambda span: span.start_time or 0)
    assert (failed.attributes or {})["error.type"] == "RATE_LIMIT"
    assert "error.type" not in (good.attributes or {})
    assert (good.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    (turn,) = named["invoke_agent main"]
    assert {parent_of(failed), parent_of(good)} == {span_id(turn)}
    assert turn.status.status_code is StatusCode.UNSET


async def test_a_failing_tool_fails_its_span_only(exporter: InMemorySpanExporter) -> None:
    script = [tool_reply("call-9", "broken", '{"text":"fly"}'), text_reply("sorry")]
    async with WireServer(script) as server, traced(server) as h:
        await run_turn(h.agent(model=WIRE))
    named = by_name(exporter.get_finished_spans())
    (tool,) = named["execute_tool broken"]
    assert tool.status.status_code is StatusCode.ERROR
    assert (tool.attributes or {})["error.type"]
    assert "cannot fly" in (tool.status.description or "")
    assert named["invoke_agent main"][0].status.status_code is StatusCode.UNSET


async def test_a_cancelled_stream_ends_its_chat_span_as_aborted(exporter: InMemorySpanExporter) -> None:
    stalled = Reply([TextDelta("partial")], ending="stall")
    async with WireServer([stalled]) as server, traced(server) as h:
        agent = h.agent(model=WIRE)
        agent.send((TextBlock(text="hi"),))
        await server.wait_for_requests(1)
        while not agent.session.events or agent.session.events[-1].type != "assistant/chunk":
            await asyncio.sleep(0.01)
        agent.cancel()
        await agent.when_idle()
    named = by_name(exporter.get_finished_spans())
    (chat,) = named[f"chat {WIRE}"]
    (turn,) = named["invoke_agent main"]
    assert (chat.attributes or {})["error.type"] == "aborted"
    assert (turn.attributes or {})["dsh.turn.end_reason"] == "aborted"
    assert chat.end_time is not None
    assert turn.end_time is not None
    assert chat.end_time <= turn.end_time


async def test_a_turn_failed_by_a_boundary_listener_still_ends_with_its_logged_reason(
    exporter: InMemorySpanExporter,
) -> None:
    async with WireServer([]) as server, traced(server) as h:

        def refuse(agent: Agent, turn: int) -> None:
            raise RuntimeError("no turns today")

        h.ctx.on(AGENT_TURN_START, refuse)
        await run_turn(h.agent(model=WIRE))
    (turn,) = by_name(exporter.get_finished_spans())["invoke_agent main"]
    assert (turn.attributes or {})["dsh.turn.end_reason"] == "error"
    assert (turn.attributes or {})["error.type"] == "RuntimeError"
    assert turn.status.status_code is StatusCode.ERROR


async def test_a_sub_agent_turn_is_a_child_of_the_tool_call_that_ran_it(exporter: InMemorySpanExporter) -> None:
    """Linked by the child's header (``parentSession``): the child agent was created before the call."""
    script = [tool_reply("call-d", "delegate", '{"task":"look"}'), text_reply("seen"), text_reply("all done")]
    async with WireServer(script) as server, traced(server) as h:
        parent = h.agent(model=WIRE)
        child = h.agents.create(
            CreateAgentOptions(
                agent_id="child",
                session_id="child-session",
                meta=SessionMeta(parent_session=parent.session.id),
                agent_options=AgentOptions(model=WIRE),
            )
        )

        async def delegate(task: str) -> str:
            """Hand ``task`` to the child agent."""
            await run_turn(child, task)
            return "child finished"

        h.tools.register(tool_from_function(delegate))
        await run_turn(parent)
    named = by_name(exporter.get_finished_spans())
    (tool,) = named["execute_tool delegate"]
    (child_turn,) = named["invoke_agent child"]
    (parent_turn,) = named["invoke_agent main"]
    assert parent_of(child_turn) == span_id(tool)
    assert parent_of(tool) == span_id(parent_turn)
    assert child_turn.context is not None
    assert parent_turn.context is not None
    assert child_turn.context.trace_id == parent_turn.context.trace_id
    assert (child_turn.attributes or {})["dsh.parent_session"] == parent.session.id
    child_chats = [span for span in named[f"chat {WIRE}"] if parent_of(span) == span_id(child_turn)]
    assert len(child_chats) == 1


async def test_an_agent_started_inside_a_tool_call_is_under_that_call(exporter: InMemorySpanExporter) -> None:
    """No header link: the child's task inherits the current span of the call that created it."""
    script = [tool_reply("call-s", "spawn", "{}"), text_reply("inner"), text_reply("outer")]
    async with WireServer(script) as server, traced(server) as h:

        async def spawn() -> str:
            """Start a helper agent and let it answer."""
            helper: ReactLoopAgent = h.agent("helper", model=WIRE)
            await run_turn(helper)
            return "ok"

        h.tools.register(tool_from_function(spawn))
        await run_turn(h.agent(model=WIRE))
    named = by_name(exporter.get_finished_spans())
    (tool,) = named["execute_tool spawn"]
    (helper_turn,) = named["invoke_agent helper"]
    assert parent_of(helper_turn) == span_id(tool)


async def test_a_tool_called_outside_an_agent_is_a_root_span(exporter: InMemorySpanExporter) -> None:
    async with WireServer([]) as server, traced(server) as h:
        result = await h.tools.execute(ToolExecution(call_id="c1", name="echo", arguments={"text": "x"}))
    assert not result.is_error
    (tool,) = by_name(exporter.get_finished_spans())["execute_tool echo"]
    assert parent_of(tool) is None


async def test_unloading_the_plugin_ends_the_spans_still_open(exporter: InMemorySpanExporter) -> None:
    """A second tracer unloaded mid-call ends its spans; a third loaded mid-turn ignores the turn it never saw."""
    release = asyncio.Event()
    limited = api_error(429, "slow down", "rate_limit_error", headers=[("retry-after", "0")])
    script = [tool_reply("call-w", "wait", "{}"), limited, text_reply("ok")]
    async with WireServer(script) as server, traced(server) as h:
        await h.ctx.plugin(llm_retry, {"baseMs": 0, "capMs": 0})
        started = asyncio.Event()

        async def wait() -> str:
            """Wait until released."""
            started.set()
            await release.wait()
            return "released"

        h.tools.register(tool_from_function(wait))
        fiber = await h.ctx.plugin(otel, {"providerName": "other"})
        agent = h.agent(model=WIRE)
        agent.send((TextBlock(text="hi"),))
        await started.wait()
        await fiber.dispose()
        await h.ctx.plugin(otel, {"providerName": "late"})
        ended = by_name(exporter.get_finished_spans())
        assert [span.name for span in ended.get("execute_tool wait", [])] == ["execute_tool wait"]
        (other,) = ended["invoke_agent main"]
        assert (other.attributes or {})["gen_ai.provider.name"] == "other"
        assert "dsh.turn.end_reason" not in (other.attributes or {})
        release.set()
        await agent.when_idle()
    providers = [(span.attributes or {}).get("gen_ai.provider.name") for span in exporter.get_finished_spans()]
    assert "late" not in providers


async def test_an_error_outside_a_traced_turn_is_ignored(exporter: InMemorySpanExporter) -> None:
    async with Harness() as h:
        spans = GenAiTracer(trace.get_tracer("test"), provider_name="p", capture=False)
        spans.error(h.agent(), 1, 0, RuntimeError("elsewhere"))
        assert spans.tracks == {}
    assert exporter.get_finished_spans() == ()


async def test_a_cancelled_tool_call_ends_its_span_as_cancelled(exporter: InMemorySpanExporter) -> None:
    script = [tool_reply("call-c", "hang", "{}")]
    async with WireServer(script) as server, traced(server) as h:
        started = asyncio.Event()

        async def hang() -> str:
            """Never returns."""
            started.set()
            await asyncio.Event().wait()
            return "never"

        h.tools.register(tool_from_function(hang))
        agent = h.agent(model=WIRE)
        agent.send((TextBlock(text="hi"),))
        await started.wait()
        agent.cancel()
        await agent.when_idle()
    named = by_name(exporter.get_finished_spans())
    (tool,) = named["execute_tool hang"]
    assert (tool.attributes or {})["error.type"] == "cancelled"
    assert (named["invoke_agent main"][0].attributes or {})["dsh.turn.end_reason"] == "aborted"


async def test_a_turn_without_a_model_has_no_request_model(exporter: InMemorySpanExporter) -> None:
    async with WireServer([]) as server, traced(server) as h:
        await run_turn(h.agent(model=None))
    (turn,) = by_name(exporter.get_finished_spans())["invoke_agent main"]
    assert "gen_ai.request.model" not in (turn.attributes or {})
    assert (turn.attributes or {})["error.type"] == "NO_MODEL"


async def test_a_turn_left_open_is_ended_when_the_next_one_starts(exporter: InMemorySpanExporter) -> None:
    async with WireServer([text_reply("second")]) as server, traced(server) as h:
        agent = h.agent(model=WIRE)

        def refuse_first(agent: Agent, turn: int) -> None:
            if turn == 1:
                agent.send((TextBlock(text="again"),))
                raise RuntimeError("not this one")

        h.ctx.on(AGENT_TURN_START, refuse_first)
        await run_turn(agent)
    turns = sorted(by_name(exporter.get_finished_spans())["invoke_agent main"], key=lambda span: span.start_time or 0)
    assert [(span.attributes or {})["dsh.turn"] for span in turns] == [1, 2]
    assert [(span.attributes or {})["dsh.turn.end_reason"] for span in turns] == ["error", "completed"]
