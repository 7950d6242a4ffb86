"""ACP session modes: ``modes`` in session/new and session/load, ``session/set_mode``, ``current_mode_update``.

The bridge runs on the real stack with the real ``permissions`` service (the state
is folded from the session log); every answer and update is checked against the
official SDK schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp.schema import CurrentModeUpdate, LoadSessionResponse, NewSessionResponse

from dsh.acp.modes import MODES, definition_of, find_definition, mode_state
from dsh.core.approval import PERMISSIONS, PermissionModeEvent, PermissionService, PermissionState
from dsh.kernel import Context
from dsh.testing.scripted import text_response
from tests.acp.client import RpcResponseError
from tests.acp.helpers import CWD, BridgeStack, bridge_stack

IDS = ["ask", "plan", "auto", "read-only", "full-access"]


class Permissions:
    """A class plugin providing the permissions service with its default state."""

    def __init__(self, ctx: Context, config: object = None) -> None:
        PermissionService(ctx)


async def permissions_stack(stack: BridgeStack) -> PermissionService:
    await stack.ctx.plugin(Permissions)
    return stack.ctx[PERMISSIONS]


async def new_session(stack: BridgeStack) -> dict[str, Any]:
    result: dict[str, Any] = await stack.client.request("session/new", {"cwd": CWD, "mcpServers": []})
    NewSessionResponse.model_validate(result)
    return result


def mode_updates(stack: BridgeStack) -> list[tuple[str, str]]:
    updates = [(sid, u) for sid, u in stack.client.session_updates if u["sessionUpdate"] == "current_mode_update"]
    for _, update in updates:
        CurrentModeUpdate.model_validate(update)
    return [(sid, update["currentModeId"]) for sid, update in updates]


async def set_mode(stack: BridgeStack, session_id: str, mode_id: str) -> Any:
    return await stack.client.request("session/set_mode", {"sessionId": session_id, "modeId": mode_id})


async def test_session_new_lists_the_modes_with_ask_current(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        await permissions_stack(stack)
        await stack.client.initialize()
        result = await new_session(stack)
        assert list(result) == ["sessionId", "modes", "configOptions"]  # configOptions: the model selection
        modes = result["modes"]
        assert modes["currentModeId"] == "ask"
        assert [mode["id"] for mode in modes["availableModes"]] == IDS
        assert all(mode["name"] and mode["description"] for mode in modes["availableModes"])


async def test_without_the_permissions_service_there_are_no_modes(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        session_id = await stack.session()
        assert (await stack.client.request("session/new", {"cwd": CWD, "mcpServers": []})).keys() == {
            "sessionId",
            "configOptions",
        }
        with pytest.raises(RpcResponseError) as caught:
            await set_mode(stack, session_id, "plan")
        assert caught.value.error == {
            "code": -32601,
            "message": "Method not found",
            "data": {"method": "session/set_mode"},
        }


async def test_set_mode_changes_the_logged_state_and_notifies_once(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path, [text_response("ok")]) as stack:
        permissions = await permissions_stack(stack)
        await stack.client.initialize()
        session_id = (await new_session(stack))["sessionId"]
        agent = stack.agent(session_id)
        assert await set_mode(stack, session_id, "plan") == {}
        assert permissions.state(agent) == PermissionState(plan=True)
        assert await set_mode(stack, session_id, "plan") == {}  # the same mode: no second update
        assert await set_mode(stack, session_id, "read-only") == {}
        assert permissions.state(agent) == PermissionState(mode="read-only", policy="ask")
        assert await set_mode(stack, session_id, "auto") == {}
        assert await set_mode(stack, session_id, "full-access") == {}
        assert permissions.state(agent) == PermissionState(mode="full-access", policy="ask")
        assert mode_updates(stack) == [(session_id, m) for m in ["plan", "read-only", "auto", "full-access"]]
        assert await stack.client.prompt(session_id, "hi") == {"stopReason": "end_turn"}
        logged = [e.data for e in agent.session.events if type(e) is PermissionModeEvent]
        assert logged[-1].mode == "full-access"


async def test_plan_keeps_the_mode_before_and_a_change_from_elsewhere_is_sent(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        permissions = await permissions_stack(stack)
        await stack.client.initialize()
        session_id = (await new_session(stack))["sessionId"]
        other = (await new_session(stack))["sessionId"]
        agent = stack.agent(session_id)
        await set_mode(stack, session_id, "auto")
        await set_mode(stack, session_id, "plan")
        assert permissions.state(agent) == PermissionState(mode="workspace-write", policy="auto", plan=True)
        await permissions.set_mode(agent, plan=False)  # what an approved exit_plan_mode does
        assert permissions.state(agent).policy == "auto"
        await permissions.set_mode(agent, policy="never-ask")  # a state no listed mode describes
        await permissions.set_mode(stack.harness.agent("outsider"), plan=True)  # no session of the bridge: not sent
        await permissions.set_mode(stack.agent(other), mode="read-only")
        await stack.client.wait_for(lambda _client: len(mode_updates(stack)) >= 5)
        assert mode_updates(stack) == [
            (session_id, "auto"),
            (session_id, "plan"),
            (session_id, "auto"),
            (session_id, "workspace-write+never-ask"),
            (other, "read-only"),
        ]


async def test_session_load_answers_the_modes_of_the_session(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        permissions = await permissions_stack(stack)
        await stack.client.initialize()
        session_id = (await new_session(stack))["sessionId"]
        await permissions.set_mode(stack.agent(session_id), policy="never-ask")
        result = await stack.client.load_session(session_id, CWD)
        LoadSessionResponse.model_validate(result)
        modes = result["modes"]
        assert modes["currentModeId"] == "workspace-write+never-ask"
        assert [mode["id"] for mode in modes["availableModes"]] == [*IDS, "workspace-write+never-ask"]
        assert await set_mode(stack, session_id, "workspace-write+never-ask") == {}
        assert await set_mode(stack, session_id, "full-access+auto") == {}
        assert permissions.state(stack.agent(session_id)) == PermissionState(mode="full-access", policy="auto")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"sessionId": "nope", "modeId": "plan"}, "Invalid params: unknown session: nope"),
        (
            {"sessionId": "SESSION", "modeId": "yolo"},
            "Invalid params: unknown mode: yolo (the modes are ask, plan, auto, read-only, full-access)",
        ),
        (
            {"sessionId": "SESSION", "modeId": "full-access+maybe"},
            "Invalid params: unknown mode: full-access+maybe (the modes are ask, plan, auto, read-only, full-access)",
        ),
    ],
)
async def test_set_mode_refuses_unknown_sessions_and_modes(
    tmp_path: Path, params: dict[str, str], message: str
) -> None:
    async with bridge_stack(tmp_path) as stack:
        await permissions_stack(stack)
        await stack.client.initialize()
        session_id = (await new_session(stack))["sessionId"]
        params = {key: session_id if value == "SESSION" else value for key, value in params.items()}
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.request("session/set_mode", params)
        assert (caught.value.code, caught.value.message) == (-32602, message)
        with pytest.raises(RpcResponseError) as malformed:
            await stack.client.request("session/set_mode", {"sessionId": session_id})
        assert malformed.value.code == -32602
        assert mode_updates(stack) == []


def test_every_listed_mode_is_found_and_describes_its_own_state() -> None:
    for definition in MODES:
        assert find_definition(definition.id) is definition
        state = PermissionState(
            mode=definition.mode or "workspace-write", policy=definition.policy or "ask", plan=definition.plan
        )
        assert definition_of(state) is definition
    assert mode_state(PermissionState())["currentModeId"] == "ask"
    assert find_definition("read-only+never-ask") is not None
    assert find_definition("plan+ask") is None
