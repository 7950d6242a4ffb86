"""The sub-agent service and tools beyond the main scenario: refusals, the spawn hook, nesting,
progress, failures, disposal, and what the tools answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dsh.core.agent import AGENT_CREATED, AGENTS, Agent, AgentOptions, AgentRegistry, CreateAgentOptions
from dsh.core.errors import HarnessError
from dsh.core.llm import text
from dsh.core.session import SESSION_EVENT, SESSION_FLUSH, Session, SessionEvent, SessionMeta, ToolResultEvent
from dsh.core.subagent import (
    SUBAGENT_PROGRESS,
    SUBAGENT_SPAWN,
    SUBAGENTS,
    SubagentProgress,
    SubagentRequest,
    SubagentResult,
    SubagentSpawn,
)
from dsh.core.tools import ToolCallPresentation, ToolDefinition, ToolExecution
from dsh.core.usage import TokenTotals
from dsh.kernel import PluginSpec, ServiceHandle, unwrap
from dsh.plugins.subagent import ToolFilter, answer_text, present_subagent_call, reason_kind
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json, event_types
from dsh.testing.scripted import Fail, text_response, tool_call_response
from tests.plugins.subagent.helpers import assert_balanced, boot, child_model


def _results(session: Session) -> dict[str, Any]:
    return {event.data.call_id: event.data for event in session.events if type(event) is ToolResultEvent}


def _error_text(session: Session, call_id: str) -> str:
    result = _results(session)[call_id]
    assert result.is_error
    return str(result.content[0].text)


async def _tool(name: str, execute: Any, present: Any = None) -> ToolDefinition:
    return ToolDefinition(
        name=name, description=name, parameters={"type": "object"}, execute=execute, present_call=present
    )


async def test_spawn_refusals_leave_nothing_behind(tmp_path: Path) -> None:
    async with Harness() as h:
        service = await boot(h, tmp_path)
        parent = h.agent()
        with pytest.raises(HarnessError, match="non-empty") as empty:
            await service.spawn(parent, SubagentRequest(prompt="  "))
        assert empty.value.code == "INVALID_ARGS"
        with pytest.raises(HarnessError, match='no tool is named "nope"'):
            await service.spawn(parent, SubagentRequest(prompt="x", tools=("nope",)))
        assert service.runs() == []
        assert [agent.id for agent in h.agents.list()] == ["main"]
        assert service.get("subagent-1") is None
        assert service.admits(parent, "subagent")


async def test_a_disposed_parent_cannot_spawn(tmp_path: Path) -> None:
    async with Harness() as h:
        service = await boot(h, tmp_path)
        owner = await h.ctx.plugin(PluginSpec(name="owner", apply=lambda ctx, config: None))
        registry: Any = ServiceHandle(unwrap(h.ctx[AGENTS]), owner.ctx)
        parent = registry.create(CreateAgentOptions(agent_id="p", session_id="p", agent_options=AgentOptions()))
        await owner.dispose()
        with pytest.raises(HarnessError, match="disposed") as refused:
            await service.spawn(parent, SubagentRequest(prompt="x"))
        assert refused.value.code == "DISPOSED"


async def test_depth_limit_and_nested_allowlists(tmp_path: Path) -> None:
    parent_script = [
        tool_call_response(
            "c1",
            "subagent",
            {"description": "d", "prompt": "p", "model": "kid", "tools": ["bash", "subagent", "subagent_output"]},
        ),
        text_response("done"),
    ]
    async with Harness(parent_script) as h:
        service = await boot(h, tmp_path, {"maxDepth": 2})
        kid = child_model(
            h,
            "kid",
            tool_call_response(
                "k1", "subagent", {"description": "g", "prompt": "p", "model": "grand", "tools": ["bash_output"]}
            ),
            tool_call_response(
                "k2", "subagent", {"description": "g", "prompt": "p", "model": "grand", "tools": ["bash"]}
            ),
            tool_call_response("k3", "subagent_output", {"task_id": "nope"}),
            text_response("kid done"),
        )
        grand = child_model(
            h, "grand", tool_call_response("g1", "subagent", {"description": "x", "prompt": "p"}), text_response("deep")
        )
        created: list[Agent] = []
        h.ctx.on(AGENT_CREATED, created.append)
        parent = h.agent()
        parent.send([text("go")])
        await parent.when_idle()
        kid.assert_consumed()
        grand.assert_consumed()
        assert [tool.name for tool in kid.requests[0].tools or []] == ["bash", "subagent", "subagent_output"]
        assert [tool.name for tool in grand.requests[0].tools or []] == ["bash"]
        (child,) = service.runs()  # the grandchild's run went with its disposed parent
        grandchild = created[-1]
        assert grandchild.id == "main/subagent-1/subagent-2"
        kid_results = _results(child.child.session)
        assert "not available to the parent agent" in kid_results["k1"].content[0].text
        assert kid_results["k2"].content == (text("deep"),)
        assert "unknown sub-agent task" in kid_results["k3"].content[0].text
        assert "not available to this sub-agent" in _error_text(grandchild.session, "g1")
        assert grandchild.session.header.delegation_depth == 2
        assert _results(parent.session)["c1"].content == (text("kid done"),)
        deep_agent = h.agents.create(
            CreateAgentOptions(agent_id="deep", session_id="deep", meta=SessionMeta(delegation_depth=2))
        )
        with pytest.raises(HarnessError, match="maxDepth") as deep:
            await service.spawn(deep_agent, SubagentRequest(prompt="x"))
        assert deep.value.code == "DEPTH_LIMIT"


async def test_the_spawn_waterfall_may_narrow_or_refuse_but_not_widen(tmp_path: Path) -> None:
    async with Harness() as h:
        service = await boot(h, tmp_path)
        child_model(h, "kid", text_response("narrow"))
        parent = h.agent()
        seen: list[tuple[tuple[str, ...] | None, int]] = []
        mode: dict[str, Any] = {"tools": ("bash",)}

        async def policy(spawn: SubagentSpawn, next: Callable[[], Awaitable[SubagentSpawn]]) -> SubagentSpawn:
            seen.append((spawn.tools, spawn.depth))
            if mode.get("refuse"):
                raise HarnessError("children are not allowed here", "DENIED")
            spawn.tools = mode["tools"]
            spawn.options.extra["permissions"] = "read-only"
            return await next()

        h.ctx.on(SUBAGENT_SPAWN, policy)
        run = await service.spawn(parent, SubagentRequest(prompt="x", model="kid", system_prompt="be a reviewer"))
        result = await run.wait()
        assert result.output == "narrow"
        assert seen[0] == (None, 1)
        assert run.child.options.extra == {"permissions": "read-only"}
        assert run.child.options.system_prompt == "be a reviewer"
        assert data_json(parent.session, "subagent/start")[0]["tools"] == ["bash"]
        mode["tools"] = ("read",)
        with pytest.raises(HarnessError, match="widened"):
            await service.spawn(parent, SubagentRequest(prompt="x", tools=("bash",)))
        mode["refuse"] = True
        with pytest.raises(HarnessError, match="not allowed"):
            await service.spawn(parent, SubagentRequest(prompt="x"))
        assert len(service.runs()) == 1
        assert len(h.agents.list()) == 1


async def test_progress_reaches_the_parent_while_children_run(tmp_path: Path) -> None:
    async with Harness() as h:
        service = await boot(h, tmp_path)

        async def noop(args: Any, execution: ToolExecution) -> list[Any]:
            return [text("ok")]

        def broken(args: Any) -> ToolCallPresentation:
            raise ValueError("bad presenter")

        h.tools.register(await _tool("plain", noop))
        h.tools.register(await _tool("broken", noop, broken))
        h.tools.register(await _tool("blank", noop, lambda args: None))
        child_model(
            h,
            "kid",
            tool_call_response("k1", "bash", {"command": "true", "description": "nothing"}),
            tool_call_response("k2", "plain", {}),
            tool_call_response("k3", "broken", {}),
            tool_call_response("k4", "blank", {}),
            text_response("all done"),
        )
        parent = h.agent()
        seen: list[tuple[Agent, SubagentProgress]] = []
        h.ctx.on(SUBAGENT_PROGRESS, lambda agent, progress: seen.append((agent, progress)))

        def fail(agent: Agent, progress: SubagentProgress) -> None:
            raise RuntimeError("a listener failed")

        h.ctx.on(SUBAGENT_PROGRESS, fail)
        run = await service.spawn(parent, SubagentRequest(prompt="x", model="kid", call_id="outer"))
        await run.wait()
        assert {agent for agent, _ in seen} == {parent}
        assert [(p.kind, p.title, p.text) for _, p in seen] == [
            ("tool", "true", ""),
            ("tool", "plain", ""),
            ("tool", "broken", ""),
            ("tool", "blank", ""),
            ("message", "", "all done"),
        ]
        assert {p.call_id for _, p in seen} == {"outer"}
        assert {p.task_id for _, p in seen} == {run.task_id}


async def test_a_failed_child_is_an_error_result(tmp_path: Path) -> None:
    parent_script = [
        tool_call_response("c1", "subagent", {"description": "d", "prompt": "p", "model": "kid"}),
        text_response("noted"),
    ]
    async with Harness(parent_script) as h:
        await boot(h, tmp_path)
        child_model(h, "kid", Fail(HarnessError("the model broke", "BROKEN")))
        parent = h.agent()
        parent.send([text("go")])
        await parent.when_idle()
        message = _error_text(parent.session, "c1")
        assert "(the sub-agent gave no answer)" in message
        assert "failed (error)" in message
        assert data_json(parent.session, "subagent/end")[0]["reason"]["kind"] == "error"


async def test_background_tools_report_collect_and_refuse(tmp_path: Path) -> None:
    parent_script = [
        tool_call_response("c1", "subagent", {"description": "d", "prompt": "p", "model": "kid", "background": True}),
        tool_call_response("c2", "subagent_output", {"task_id": "subagent-1"}),
        tool_call_response("c3", "subagent_output", {"task_id": "subagent-1", "wait": True}),
        tool_call_response("c4", "subagent_output", {"task_id": "subagent-1"}),
        tool_call_response("c5", "subagent_cancel", {"task_id": "subagent-1"}),
        text_response("collected"),
    ]
    async with Harness(parent_script) as h:
        service = await boot(h, tmp_path)
        child_model(h, "kid", tool_call_response("k1", "bash", {"command": "sleep 0.2"}), text_response("bg answer"))
        parent = h.agent()
        parent.send([text("go")])
        await parent.when_idle()
        results = _results(parent.session)
        assert results["c2"].content == (text("sub-agent task subagent-1 is still running"),)
        assert results["c3"].content == (text("bg answer"),)
        assert results["c4"].content == (text("bg answer"),)
        assert results["c5"].content == (text("sub-agent task subagent-1 had already finished (completed)"),)
        (steered,) = data_json(parent.session, "steering/message")  # the notice, between two steps
        assert "subagent-1 completed" in steered["content"][0]["text"]
        assert "context/message" not in event_types(parent.session)
        other = h.agent("other")
        (run,) = service.runs(parent)
        execution = ToolExecution(call_id="x", name="subagent_output", arguments={"task_id": run.task_id}, agent=other)
        refused = await h.tools.execute(execution)
        assert refused.is_error
        assert "belongs to another agent" in refused.content[0].text  # type: ignore[union-attr]
        lonely = await h.tools.execute(
            ToolExecution(call_id="y", name="subagent", arguments={"description": "d", "prompt": "p"})
        )
        assert "needs a calling agent" in lonely.content[0].text  # type: ignore[union-attr]


async def test_a_background_child_finishing_while_the_parent_idles_leaves_a_notice(tmp_path: Path) -> None:
    async with Harness() as h:
        service = await boot(h, tmp_path)
        child_model(h, "kid", text_response("later"))
        parent = h.agent()
        run = await service.spawn(parent, SubagentRequest(prompt="x", model="kid", background=True))
        await run.wait()
        assert event_types(parent.session) == [
            "turn/start",
            "subagent/start",
            "turn/end",
            "turn/start",
            "subagent/end",
            "context/message",
            "turn/end",
        ]
        notice = data_json(parent.session, "context/message")[0]
        assert notice["source"] == {"kind": "plugin", "plugin": "subagent"}
        assert "subagent_output" in notice["content"][0]["text"]
        assert_balanced(list(parent.session.events))


async def test_cancel_before_the_child_ran_and_failing_appends(tmp_path: Path) -> None:
    async with Harness() as h:
        service = await boot(h, tmp_path)
        parent = h.agent()
        run = await service.spawn(parent, SubagentRequest(prompt="x", model="kid"))
        run.cancel()
        run.cancel()  # once is enough
        result = await run.wait()
        assert result.status == "cancelled"
        assert result.reason is msgspec.UNSET
        assert run.status == "cancelled"
        run.cancel()  # settled: a no-op

        def refuse(session: Session, event: SessionEvent) -> None:
            if event.type in {"subagent/start", "subagent/end"} and session is parent.session:
                raise RuntimeError(f"cannot log {event.type}")

        stop = h.ctx.on(SESSION_EVENT, refuse)
        with pytest.raises(RuntimeError, match="cannot log subagent/start"):
            await service.spawn(parent, SubagentRequest(prompt="x", model="kid"))
        assert len(h.agents.list()) == 1
        stop()
        child_model(h, "kid", text_response("fine"))
        run = await service.spawn(parent, SubagentRequest(prompt="x", model="kid"))
        stop = h.ctx.on(SESSION_EVENT, refuse)
        assert (await run.wait()).output == "fine"  # the end could not be logged: only a warning
        stop()


async def test_a_failing_flush_after_a_one_shot_turn_is_only_logged(tmp_path: Path) -> None:
    async with Harness() as h:
        service = await boot(h, tmp_path)
        child_model(h, "kid", text_response("done"))
        parent = h.agent()

        async def broken(session: Session) -> None:
            if session is parent.session:
                raise OSError("disk full")

        h.ctx.on(SESSION_FLUSH, broken)
        run = await service.spawn(parent, SubagentRequest(prompt="x", model="kid"))
        await run.wait()
        assert event_types(parent.session).count("turn/end") == 2


async def test_disposing_the_parent_disposes_its_background_children(tmp_path: Path) -> None:
    async with Harness() as h:
        service = await boot(h, tmp_path)
        child_model(h, "kid", tool_call_response("k1", "bash", {"command": "sleep 30"}))
        owner = await h.ctx.plugin(PluginSpec(name="owner", apply=lambda ctx, config: None))
        registry: AgentRegistry = ServiceHandle(unwrap(h.ctx[AGENTS]), owner.ctx)  # type: ignore[assignment]
        parent = registry.create(CreateAgentOptions(agent_id="p", session_id="p", agent_options=AgentOptions()))
        run = await service.spawn(parent, SubagentRequest(prompt="x", model="kid", background=True))
        await owner.dispose()
        result = await run.wait()
        assert result.status == "cancelled"
        assert run.child.status == "disposed"
        assert event_types(parent.session)[-1] == "turn/end"  # nothing written after the parent went
        assert "subagent/end" not in event_types(parent.session)
        assert service.runs(parent) == []  # a disposed parent's runs are forgotten

        done = h.agent("other")
        child_model(h, "quick", text_response("quick"))
        owner = await h.ctx.plugin(PluginSpec(name="owner2", apply=lambda ctx, config: None))
        registry = ServiceHandle(unwrap(h.ctx[AGENTS]), owner.ctx)  # type: ignore[assignment]
        parent = registry.create(CreateAgentOptions(agent_id="q", session_id="q", agent_options=AgentOptions()))
        settled = await service.spawn(parent, SubagentRequest(prompt="x", model="quick"))
        await settled.wait()
        assert service.runs(parent) == [settled]
        await owner.dispose()
        assert service.runs(parent) == []
        assert service.runs(done) == []


async def test_unloading_the_plugin_disposes_running_children(tmp_path: Path) -> None:
    async with Harness() as h:
        await boot(h, tmp_path)
        child_model(h, "kid", tool_call_response("k1", "bash", {"command": "sleep 30"}))
        fiber = next(f for f in h.ctx.fiber.children if f.info is not None and f.info.name == "subagent")
        service = h.ctx[SUBAGENTS]
        parent = h.agent()
        run = await service.spawn(parent, SubagentRequest(prompt="x", model="kid", background=True))
        await fiber.dispose()
        assert (await run.wait()).status == "cancelled"
        assert [agent.id for agent in h.agents.list()] == ["main"]


def test_presentation_and_reports() -> None:
    card = present_subagent_call({"description": " ", "prompt": "look", "background": True})
    assert card.title == "Sub-agent (background)"
    assert card.content == (text("look"),)
    unknown = msgspec.Raw(b'{"kind":"future","x":1}')
    assert reason_kind(unknown) == "future"
    failed = SubagentResult(
        task_id="t", child_session="s", status="failed", output="half", usage=TokenTotals(), reason=unknown
    )
    assert answer_text(failed) == "half\n[sub-agent task t failed (future)]"
    assert ToolFilter(allow=frozenset({"a", "b"})).narrowed(frozenset({"b", "c"}), frozenset()).allow == {"b"}
    assert not ToolFilter(deny=frozenset({"a"})).admits("a")


async def test_children_go_with_the_fiber_that_spawned_them(tmp_path: Path) -> None:
    async with Harness() as h:
        await boot(h, tmp_path)
        child_model(h, "kid", tool_call_response("k1", "bash", {"command": "sleep 30"}))
        caller = await h.ctx.plugin(PluginSpec(name="caller", apply=lambda ctx, config: None, inject=["subagents"]))
        parent = h.agent()
        run = await caller.ctx[SUBAGENTS].spawn(parent, SubagentRequest(prompt="x", model="kid"))
        await caller.dispose()
        result = await run.wait()
        assert result.status == "cancelled"
        assert run.child.status == "disposed"
        assert data_json(parent.session, "subagent/end")[0]["status"] == "cancelled"
