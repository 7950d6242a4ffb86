"""SPEC §15 ``createStdioChat EOF exit``: end of input exits once the submitted work settled."""

from __future__ import annotations

from dsh.agent_loop import AGENT_LOOP
from dsh.core.agent import AGENT_STATUS, AgentOptions
from dsh.core.llm import text
from dsh.kernel import PluginSpec
from dsh.plugins.ui_stdio import EXIT_DELAY
from dsh.testing.harness import MOCK_MODEL, Harness
from dsh.testing.scripted import HANG, text_response
from tests.plugins.ui_stdio.helpers import start_chat
from tests.plugins.ui_stdio.test_input import running


async def test_exits_immediately_on_eof_when_no_work_was_submitted() -> None:
    """exits immediately on EOF when no work was submitted"""
    async with Harness() as h:
        h.agent("main")
        chat = start_chat(h.ctx)
        chat.keyboard.close()
        await chat.timer.armed.wait()
        assert [handle.delay for handle in chat.timer.scheduled] == [EXIT_DELAY] == [0.2]
        assert chat.exits == []
        chat.timer.fire()
        assert chat.exits == [0]


async def test_waits_for_the_agent_to_settle_idle_after_running_before_exiting() -> None:
    """waits for the agent to settle idle after running before exiting"""
    async with Harness([text_response("done")]) as h:
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        chat.keyboard.type("work")
        chat.keyboard.close()  # EOF right behind the line, before the agent even started
        await running(h, agent)
        assert chat.timer.scheduled == []
        await agent.when_idle()
        assert len(chat.timer.scheduled) == 1
        chat.timer.fire()
        assert chat.exits == [0]
        assert chat.output.endswith("done\n> ")


async def test_schedules_the_exit_only_once_when_idle_fires_repeatedly() -> None:
    """schedules the exit only once when idle fires repeatedly"""
    async with Harness([text_response("done")], invariants_plugin=False) as h:  # it rejects repeated statuses
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        chat.keyboard.type("work")
        chat.keyboard.close()
        await chat.keyboard.ended.wait()  # the line was sent, then EOF seen
        await agent.when_idle()
        for _ in range(3):
            h.ctx.emit(AGENT_STATUS, agent, "idle")
        assert len(chat.timer.scheduled) == 1
        chat.timer.fire()
        assert chat.exits == [0]


async def test_does_not_exit_on_an_idle_transition_for_a_different_agent() -> None:
    """does not exit on an idle transition for a different agent"""
    async with Harness([HANG, text_response("side")]) as h:
        main = h.agent("main")
        other = h.agent("other")
        chat = start_chat(h.ctx)
        chat.keyboard.type("hold on")
        await running(h, main)
        chat.keyboard.close()
        other.send([text("go")])
        await other.when_idle()
        assert other.status == "idle"
        assert chat.timer.scheduled == []
        main.abort()
        await main.when_idle()
        assert len(chat.timer.scheduled) == 1


async def test_does_not_exit_while_a_turn_is_still_running_at_eof() -> None:
    """does not exit while a turn is still running at EOF"""
    async with Harness([HANG], invariants_plugin=False) as h:  # it rejects the stray status
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        chat.keyboard.type("long job")
        await running(h, agent)
        chat.keyboard.close()
        await chat.keyboard.ended.wait()
        h.ctx.emit(AGENT_STATUS, agent, "idle")  # a stray idle while the agent still runs
        assert chat.timer.scheduled == []
        agent.abort()
        await agent.when_idle()
        assert len(chat.timer.scheduled) == 1
        chat.timer.fire()
        assert chat.exits == [0]


async def test_a_missing_agent_counts_as_settled() -> None:
    """Work was submitted and seen running, but the agent is gone by the last idle: exit."""
    async with Harness([text_response("done")]) as h:
        owner = await h.ctx.plugin(
            PluginSpec(
                name="owner",
                inject=[AGENT_LOOP],
                apply=lambda ctx, _config: ctx[AGENT_LOOP].create("main", AgentOptions(model=MOCK_MODEL)),
            )
        )
        agent = owner.instance
        chat = start_chat(h.ctx)
        chat.keyboard.type("work")
        await running(h, agent)
        await agent.when_idle()
        await owner.dispose()
        assert h.agents.get("main") is None
        chat.keyboard.close()
        await chat.timer.armed.wait()
        chat.timer.fire()
        assert chat.exits == [0]
