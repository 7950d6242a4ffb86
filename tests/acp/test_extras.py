"""The bridge's session extras over the wire: commands, model selection, usage, fork, steering."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from dsh.acp.models import model_option
from dsh.core.commands import COMMANDS, Command, CommandRegistry
from dsh.core.llm import ContentBlock, text
from dsh.core.session import ModelSelectEvent, SteeringMessageEvent, UsageEvent, logged_model
from dsh.core.tools import ToolDefinition, ToolExecution
from dsh.kernel import Context, PluginSpec
from dsh.testing.scripted import HANG, text_response, tool_call_response
from tests.acp.client import RpcResponseError, message_text, result_of
from tests.acp.helpers import CWD, BridgeStack, bridge_stack, saw_chunk

PARAMETERS = {"type": "object", "properties": {}, "additionalProperties": True}


async def echo(agent: Any, args: str) -> str | None:
    return f"echo: {args}" if args else None


async def broken(agent: Any, args: str) -> str | None:
    raise RuntimeError("no luck")


def commands_of(stack: BridgeStack, session_id: str) -> list[list[str]]:
    return [
        [command["name"] for command in update["availableCommands"]]
        for sid, update in stack.client.session_updates
        if sid == session_id and update["sessionUpdate"] == "available_commands_update"
    ]


async def with_commands(stack: BridgeStack) -> Context:
    """Load the commands service and a plugin registering ``/echo``; returns that plugin's context."""
    await stack.ctx.plugin(CommandRegistry)
    holder: list[Context] = []

    def apply(ctx: Context, _raw: object) -> None:
        holder.append(ctx)
        ctx[COMMANDS].register(Command(name="echo", description="say it back", handler=echo, hint="text"))

    await stack.ctx.plugin(PluginSpec(name="echo-command", inject=["commands"], apply=apply))
    return holder[0]


# ------------------------------------------------------------------ commands
async def test_commands_are_advertised_after_new_and_run_instead_of_a_turn(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path, [text_response("from the model")]) as stack:
        plugin = await with_commands(stack)
        session_id = await stack.session()
        await stack.client.wait_for(lambda c: bool(commands_of(stack, session_id)))
        update = next(u for u in stack.updates if u["sessionUpdate"] == "available_commands_update")
        assert update["availableCommands"] == [
            {"name": "echo", "description": "say it back", "input": {"hint": "text"}}
        ]
        # the answer came first, then the update
        kinds = [frame.get("method", "result") for frame in stack.client.frames]
        assert kinds[-2:] == ["result", "session/update"]
        assert await stack.client.prompt(session_id, "/echo hello  there ") == {"stopReason": "end_turn"}
        assert message_text(stack.updates) == "echo: hello  there"
        assert await stack.client.prompt(session_id, "/echo") == {"stopReason": "end_turn"}
        assert stack.agent(session_id).session.events == ()  # no turn, nothing logged
        # an unknown command is an ordinary prompt
        assert await stack.client.prompt(session_id, "/nope at all") == {"stopReason": "end_turn"}
        assert "from the model" in message_text(stack.updates)
        # a change of the set reaches every live session
        plugin[COMMANDS].register(Command(name="broken", description="fails", handler=broken))
        await stack.client.wait_for(lambda c: commands_of(stack, session_id)[-1] == ["broken", "echo"])
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.prompt(session_id, "/broken")
        assert caught.value.error["code"] == -32603
        assert "/broken failed: no luck" in caught.value.message


async def test_removing_the_commands_service_advertises_an_empty_set(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        fiber = await stack.ctx.plugin(CommandRegistry)
        session_id = await stack.session()
        await stack.client.request("session/list", {})  # answered after anything sent on opening
        assert commands_of(stack, session_id) == []  # an empty set is not announced on opening
        await stack.ctx.plugin(
            PluginSpec(
                name="late",
                inject=["commands"],
                apply=lambda ctx, _raw: ctx[COMMANDS].register(Command(name="late", description="d", handler=echo)),
            )
        )
        await stack.client.wait_for(lambda c: commands_of(stack, session_id)[-1] == ["late"])
        await fiber.dispose()
        await stack.client.wait_for(lambda c: commands_of(stack, session_id)[-1] == [])


async def test_without_the_commands_service_nothing_is_advertised_and_slash_lines_reach_the_model(
    tmp_path: Path,
) -> None:
    async with bridge_stack(tmp_path, [text_response("model saw it")]) as stack:
        session_id = await stack.session()
        assert await stack.client.prompt(session_id, "/echo hi") == {"stopReason": "end_turn"}
        assert message_text(stack.updates) == "model saw it"
        assert commands_of(stack, session_id) == []


# ------------------------------------------------------------------- models
async def test_set_config_option_switches_the_model_and_the_next_turn_logs_it(tmp_path: Path) -> None:
    script = [text_response("one"), text_response("two")]
    async with bridge_stack(tmp_path, script) as stack:
        stack.harness.llm.register_adapter(["other"], stack.harness.model)
        await stack.client.initialize()
        result = await stack.client.request("session/new", {"cwd": CWD, "mcpServers": []})
        session_id = result["sessionId"]
        assert result["configOptions"] == [model_option(["mock", "other"], "mock")]
        answer = await stack.client.request(
            "session/set_config_option", {"sessionId": session_id, "configId": "model", "value": "other"}
        )
        assert answer == {"configOptions": [model_option(["mock", "other"], "other")]}
        await stack.client.prompt(session_id, "hi")
        assert stack.harness.model.requests[-1].model == "other"
        events = stack.agent(session_id).session.events
        selects = [e for e in events if type(e) is ModelSelectEvent]
        assert len(selects) == 1
        assert selects[0].data.model == "other"
        assert events.index(selects[0]) == 2  # after turn/start and the prompt, inside the turn
        # the same model again: nothing new to log; the older spelling works too
        assert await stack.client.request("session/set_model", {"sessionId": session_id, "modelId": "other"}) == {}
        await stack.client.prompt(session_id, "again")
        assert len([e for e in stack.agent(session_id).session.events if type(e) is ModelSelectEvent]) == 1
        assert logged_model(stack.agent(session_id).session.events) == "other"


async def test_a_resumed_session_uses_the_logged_model(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path, [text_response("one")]) as first:
        first.harness.llm.register_adapter(["other"], first.harness.model)
        session_id = await first.session()
        await first.client.request("session/set_model", {"sessionId": session_id, "modelId": "other"})
        await first.client.prompt(session_id, "hi")
    async with bridge_stack(tmp_path, [text_response("two")]) as second:
        second.harness.llm.register_adapter(["other"], second.harness.model)
        await second.client.initialize()
        loaded = await second.client.load_session(session_id, CWD)
        assert loaded["configOptions"][0]["currentValue"] == "other"
        await second.client.prompt(session_id, "more")
        assert second.harness.model.requests[-1].model == "other"


async def test_unknown_models_options_and_sessions_are_invalid_params(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        session_id = await stack.session()
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.request("session/set_model", {"sessionId": session_id, "modelId": "gpt-9"})
        assert caught.value.error == {
            "code": -32602,
            "message": 'Invalid params: unknown model "gpt-9": choose one of the available models: mock',
        }
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.request(
                "session/set_config_option", {"sessionId": session_id, "configId": "mode", "value": "x"}
            )
        assert caught.value.message == 'Invalid params: unknown config option "mode": the only one is "model"'
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.request("session/set_model", {"sessionId": "nope", "modelId": "mock"})
        assert caught.value.message == "Invalid params: unknown session: nope"


def test_the_model_option_shows_a_current_model_nobody_lists_and_names_no_models() -> None:
    option = model_option(["a"], "custom")
    assert [entry["value"] for entry in option["options"]] == ["custom", "a"]
    assert model_option(["a"], None)["currentValue"] == "a"
    assert model_option([], None)["currentValue"] == ""
    from dsh.acp.models import unknown_model_message

    assert (
        unknown_model_message("x", [])
        == 'unknown model "x": choose one of the available models: none (the tree serves no model)'
    )


async def test_no_llm_models_and_no_configured_model_means_no_selector(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path, config={"model": None}) as stack:
        stack.harness.llm._adapters.clear()  # a tree serving no model
        await stack.client.initialize()
        assert await stack.client.request("session/new", {"cwd": CWD, "mcpServers": []}) == {
            "sessionId": stack.bridge.session_ids[0]
        }


# -------------------------------------------------------------------- usage
async def test_usage_update_after_each_step_with_context_and_cost(tmp_path: Path) -> None:
    script = [tool_call_response("c1", "noop", {}), text_response("done")]
    async with bridge_stack(tmp_path, script, config={"contextWindows": {"mock": 1000}}) as stack:

        async def noop(args: Any, execution: ToolExecution) -> list[ContentBlock]:
            return [text("ok")]

        stack.harness.tools.register(ToolDefinition(name="noop", description="d", parameters=PARAMETERS, execute=noop))
        session_id = await stack.session()
        await stack.client.prompt(session_id, "go")
        usages = [u for u in stack.updates if u["sessionUpdate"] == "usage_update"]
        assert usages == [
            {"sessionUpdate": "usage_update", "used": 15, "size": 1000},
            {"sessionUpdate": "usage_update", "used": 14, "size": 1000},
        ]
        # a known, priced model reports cost (USD) too
        stack.harness.llm.register_adapter(["deepseek-v4-flash"], stack.harness.model)
        await stack.client.request("session/set_model", {"sessionId": session_id, "modelId": "deepseek-v4-flash"})
        await stack.client.initialize()
        stack.updates.clear()
        await stack.client.load_session(session_id, CWD)  # a re-load replays and reports the usage so far
        await stack.client.wait_for(lambda c: any(u["sessionUpdate"] == "usage_update" for u in c.updates))
        (update,) = [u for u in stack.updates if u["sessionUpdate"] == "usage_update"]
        assert update["used"] == 14
        assert update["size"] == 256_000
        tokens_cost = (20 * 0.14 + 9 * 0.28) / 1_000_000
        assert update["cost"] == {"amount": pytest.approx(tokens_cost), "currency": "USD"}


async def test_no_usage_update_without_a_known_context_window(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path, [text_response("hi")]) as stack:
        session_id = await stack.session()
        await stack.client.prompt(session_id, "go")
        assert any(type(e) is UsageEvent for e in stack.agent(session_id).session.events)
        assert not [u for u in stack.updates if u["sessionUpdate"] == "usage_update"]


# --------------------------------------------------------------------- fork
async def test_fork_a_live_session_after_its_last_completed_turn(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path, [text_response("first"), text_response("in the fork")]) as stack:
        session_id = await stack.session()
        await stack.client.prompt(session_id, "hello")
        result = await stack.client.request("session/fork", {"sessionId": session_id, "cwd": CWD})
        fork_id = result["sessionId"]
        assert fork_id != session_id
        assert "configOptions" in result
        fork = stack.agent(fork_id).session
        assert fork.header.parent_session == session_id
        assert [type(e) for e in fork.events] == [type(e) for e in stack.agent(session_id).session.events]
        assert await stack.client.prompt(fork_id, "go on") == {"stopReason": "end_turn"}
        assert stack.harness.model.requests[-1].messages[0].content == (text("hello"),)
        listed = await stack.client.request("session/list", {"cwd": CWD})
        assert {row["sessionId"] for row in listed["sessions"]} == {session_id, fork_id}


async def test_fork_a_stored_session_and_the_refusals(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path, [text_response("first")]) as first:
        session_id = await first.session()
        await first.client.prompt(session_id, "hello")
        empty = await first.client.new_session(CWD)
    async with bridge_stack(tmp_path) as second:
        await second.client.initialize()
        forked = await second.client.request("session/fork", {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
        assert second.agent(forked["sessionId"]).session.header.parent_session == session_id
        with pytest.raises(RpcResponseError) as caught:
            await second.client.request("session/fork", {"sessionId": session_id, "cwd": str(tmp_path)})
        assert "cwd mismatch" in caught.value.message
        with pytest.raises(RpcResponseError) as caught:
            await second.client.request("session/fork", {"sessionId": forked["sessionId"], "cwd": str(tmp_path)})
        assert "cwd mismatch" in caught.value.message
        live_empty = await second.client.new_session(CWD)
        with pytest.raises(RpcResponseError) as caught:
            await second.client.request("session/fork", {"sessionId": live_empty, "cwd": CWD})
        assert caught.value.error["code"] == -32602
        assert "no completed turn to fork at" in caught.value.message
        with pytest.raises(RpcResponseError) as caught:
            await second.client.request("session/fork", {"sessionId": "missing", "cwd": CWD})
        assert caught.value.message == "Invalid params: unknown session: missing"
        assert empty  # a session without a turn was never stored


# ----------------------------------------------------------------- steering
def steering_stack_script() -> list[Any]:
    return [tool_call_response("c1", "slow", {}), text_response("steered answer")]


async def slow_tool(stack: BridgeStack) -> asyncio.Event:
    release = asyncio.Event()

    async def slow(args: Any, execution: ToolExecution) -> list[ContentBlock]:
        await release.wait()
        return [text("slow done")]

    stack.harness.tools.register(ToolDefinition(name="slow", description="d", parameters=PARAMETERS, execute=slow))
    return release


def saw_tool_call(client: Any) -> bool:
    return any(u["sessionUpdate"] == "tool_call" for u in client.updates)


async def test_an_opted_in_client_steers_the_running_turn_with_a_second_prompt(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path, steering_stack_script()) as stack:
        release = await slow_tool(stack)
        capabilities = {"_meta": {"steering": {"sessionPrompt": True}}}
        await stack.client.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
        session_id = await stack.client.new_session(CWD)
        first = stack.client.prompt_future(session_id, "start")
        await stack.client.wait_for(saw_tool_call)
        agent = stack.agent(session_id)
        steered = asyncio.Event()
        steer = agent.steer

        def steer_and_tell(content: Any, **options: Any) -> None:
            steer(content, **options)
            steered.set()

        agent.steer = steer_and_tell  # type: ignore[method-assign]
        second = stack.client.prompt_future(session_id, "and also this")
        await steered.wait()  # the second prompt reached the running turn before the tool returns
        release.set()
        assert result_of(await first) == {"stopReason": "end_turn"}
        assert result_of(await second) == {"stopReason": "end_turn"}
        events = stack.agent(session_id).session.events
        steering = [e for e in events if type(e) is SteeringMessageEvent]
        assert len(steering) == 1
        assert steering[0].data.content == (text("and also this"),)
        assert len(stack.harness.model.requests) == 2  # one turn, the steering joined it


async def test_a_steered_prompt_of_a_cancelled_turn_is_cancelled_too(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path, [HANG]) as stack:
        capabilities = {"_meta": {"steering": {"sessionPrompt": True}}}
        await stack.client.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
        session_id = await stack.client.new_session(CWD)
        first = stack.client.prompt_future(session_id, "start")
        await stack.client.wait_for(saw_chunk())
        second = stack.client.prompt_future(session_id, "more")
        await stack.client.wait_for(lambda c: len(stack.agent(session_id).session.events) > 0)
        await asyncio.sleep(0.05)
        stack.client.cancel(session_id)
        assert result_of(await first) == {"stopReason": "cancelled"}
        assert result_of(await second) == {"stopReason": "cancelled"}


async def test_the_steering_extension_injects_starts_or_asks_for_a_prompt(tmp_path: Path) -> None:
    script = [tool_call_response("c1", "slow", {}), text_response("after"), text_response("new turn")]
    async with bridge_stack(tmp_path, script) as stack:
        release = await slow_tool(stack)
        session_id = await stack.session()
        block = [{"type": "text", "text": "steer me"}]
        idle_only = {"steering": {"idleBehavior": "promptRequired"}}
        answer = await stack.client.request(
            "_session/steering", {"sessionId": session_id, "prompt": block, "_meta": idle_only}
        )
        assert answer == {"outcome": "promptRequired", "reason": "no turn is running: send it with session/prompt"}
        first = stack.client.prompt_future(session_id, "start")
        await stack.client.wait_for(saw_tool_call)
        assert await stack.client.request("_session/steering", {"sessionId": session_id, "prompt": block}) == {
            "outcome": "injected"
        }
        release.set()
        assert result_of(await first) == {"stopReason": "end_turn"}
        await stack.agent(session_id).when_idle()
        started = await stack.client.request("_session/steering", {"sessionId": session_id, "prompt": block})
        assert started == {"outcome": "startedNewTurn"}
        await stack.client.wait_for(lambda c: "new turn" in message_text(c.updates))
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.request(
                "_session/steering", {"sessionId": session_id, "prompt": [{"type": "text", "text": " "}]}
            )
        assert caught.value.message == "Invalid params: empty prompt"
