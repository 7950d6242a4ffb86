"""The acceptance scenario: a scripted parent with a foreground and a background child, on real
JSONL logs and real bash processes."""

from __future__ import annotations

import time
from pathlib import Path

from dsh.core.agent import AgentOptions
from dsh.core.llm import AgentSource, text
from dsh.core.session import AbortedReason, ToolResultEvent, TurnEndEvent
from dsh.core.subagent import SubagentEndEvent, SubagentStartEvent
from dsh.core.usage import TokenTotals, summarize_usage
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json
from dsh.testing.scripted import text_response, tool_call_response
from tests.plugins.subagent.helpers import (
    alive,
    assert_balanced,
    boot,
    child_model,
    gone_by,
    persistence,
    pid_of,
    sleeper,
)


async def test_foreground_and_background_children_linked_both_ways(tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    parent_script = [
        tool_call_response(
            "c1", "subagent", {"description": "sleep", "prompt": "sleep", "model": "bg", "background": True}
        ),
        tool_call_response("c2", "subagent", {"description": "answer", "prompt": "what is 6*7?", "model": "fg"}),
        text_response("started both"),
        tool_call_response("c3", "subagent_cancel", {"task_id": "subagent-1"}),
        text_response("cancelled it"),
    ]
    async with Harness(parent_script) as h:
        service = await boot(h, tmp_path / "logs")
        bg = child_model(h, "bg", tool_call_response("k1", "bash", {"command": sleeper(pidfile)}))
        fg = child_model(h, "fg", text_response("42"))
        parent = h.loop.create("main", AgentOptions(model="mock", system_prompt="be brief"))
        parent.send([text("go")])
        await parent.when_idle()
        pid = await pid_of(pidfile)
        assert alive(pid)
        parent.send([text("cancel the sleeper")])
        await parent.when_idle()
        assert await gone_by(pid, time.monotonic() + 1.0)
        background, foreground = service.runs(parent)
        assert (background.status, foreground.status) == ("cancelled", "completed")
        bg.assert_consumed()
        fg.assert_consumed()

        results = {event.data.call_id: event.data for event in parent.session.events if type(event) is ToolResultEvent}
        assert results["c2"].content == (text("42"),)
        assert not results["c2"].is_error
        assert "subagent-1" in results["c1"].content[0].text  # type: ignore[union-attr]
        assert results["c3"].content == (text("cancelled sub-agent task subagent-1"),)

        # parent -> child: subagent/start and subagent/end name the child sessions
        starts = [event.data for event in parent.session.events if type(event) is SubagentStartEvent]
        assert [(s.task_id, s.call_id, s.background, s.model, s.depth) for s in starts] == [
            ("subagent-1", "c1", True, "bg", 1),
            ("subagent-2", "c2", False, "fg", 1),
        ]
        ends = {event.data.task_id: event.data for event in parent.session.events if type(event) is SubagentEndEvent}
        assert ends["subagent-1"].status == "cancelled"
        assert ends["subagent-2"].status == "completed"
        assert {s.child_session for s in starts} == {e.child_session for e in ends.values()}

        # child -> parent: the header names the parent session and call
        for start in starts:
            loaded = await persistence(h).load(start.child_session)
            header = loaded.meta
            assert (header.parent_session, header.parent_call_id, header.origin, header.delegation_depth) == (
                parent.session.id,
                start.call_id,
                "subagent",
                1,
            )
            assert_balanced(list(loaded.events))
            first = data_json(loaded.events, "user/message")[0]
            assert first["source"] == {"kind": "agent", "agentId": "main"}
        # the child inherits the parent's system prompt and never sees the sub-agent tools
        request = fg.requests[0]
        assert request.system
        assert "be brief" in request.system
        assert request.tools is not None
        assert "bash" in {tool.name for tool in request.tools}
        assert not {"subagent", "subagent_output", "subagent_cancel"} & {tool.name for tool in request.tools}
        assert_balanced(list(parent.session.events))
        assert AgentSource(agent_id="main") == loaded.events[1].data.source  # type: ignore[union-attr]


async def test_cancelling_the_parent_turn_stops_both_children_within_a_second(tmp_path: Path) -> None:
    bg_pid, fg_pid = tmp_path / "bg.pid", tmp_path / "fg.pid"
    parent_script = [
        tool_call_response(
            "c1", "subagent", {"description": "bg", "prompt": "sleep", "model": "bg", "background": True}
        ),
        tool_call_response("c2", "subagent", {"description": "fg", "prompt": "sleep too", "model": "fg"}),
    ]
    async with Harness(parent_script) as h:
        service = await boot(h, tmp_path / "logs")
        child_model(h, "bg", tool_call_response("k1", "bash", {"command": sleeper(bg_pid)}))
        child_model(h, "fg", tool_call_response("k2", "bash", {"command": sleeper(fg_pid)}))
        parent = h.loop.create("main", AgentOptions(model="mock"))
        parent.send([text("go")])
        pids = [await pid_of(bg_pid), await pid_of(fg_pid)]
        assert all(alive(pid) for pid in pids)
        started = time.monotonic()
        parent.cancel()
        await parent.when_idle()
        for run in service.runs(parent):
            await run.wait()
        for pid in pids:
            assert await gone_by(pid, started + 1.0)
        elapsed = time.monotonic() - started
        assert elapsed < 1.0, elapsed
        assert [run.status for run in service.runs(parent)] == ["cancelled", "cancelled"]
        ends = [event for event in parent.session.events if type(event) is TurnEndEvent]
        assert isinstance(ends[0].data.reason, AbortedReason)
        assert sorted(data["status"] for data in data_json(parent.session, "subagent/end")) == [
            "cancelled",
            "cancelled",
        ]
        assert_balanced(list(parent.session.events))
        for run in service.runs(parent):
            assert run.child.status == "disposed"
            assert_balanced(list(run.child.session.events))


async def test_child_usage_rolls_up_into_the_parent_log(tmp_path: Path) -> None:
    parent_script = [
        tool_call_response("c1", "subagent", {"description": "count", "prompt": "count", "model": "fg"}),
        text_response("ok"),
    ]
    async with Harness(parent_script) as h:
        service = await boot(h, tmp_path / "logs")
        child_model(h, "fg", tool_call_response("k1", "bash", {"command": "echo hi"}), text_response("hello"))
        parent = h.loop.create("main", AgentOptions(model="mock"))
        parent.send([text("go")])
        await parent.when_idle()
        (run,) = service.runs(parent)
        child_usage = summarize_usage(run.child.session.events).tokens
        assert child_usage == TokenTotals(input_tokens=20, output_tokens=10)
        summary = summarize_usage(parent.session.events)
        own = TokenTotals(input_tokens=20, output_tokens=7)
        assert summary.delegated == child_usage
        assert summary.tokens == own.plus(child_usage)
        assert summary.turns[0].tokens == summary.tokens
        assert data_json(parent.session, "subagent/end")[0]["usage"] == {
            "inputTokens": 20,
            "outputTokens": 10,
            "cacheReadTokens": 0,
            "cacheWriteTokens": 0,
            "reasoningTokens": 0,
        }
