"""A sub-agent starts from its parent's permission state and can never be wider than it."""

from __future__ import annotations

from pathlib import Path

from dsh.core.approval import INHERITED_STATE, PERMISSIONS, PermissionState, inherited_state
from dsh.core.subagent import SubagentRequest
from dsh.plugins import permissions
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json
from dsh.testing.scripted import text_response
from tests.plugins.subagent.helpers import boot, child_model


async def test_a_child_inherits_its_parents_mode_policy_plan_and_grants_and_is_pinned_to_them(tmp_path: Path) -> None:
    async with Harness() as h:
        await h.ctx.plugin(permissions, {})
        service = await boot(h, tmp_path)
        child_model(h, "kid", text_response("read only here"))
        parent = h.agent()
        gate = h.ctx[PERMISSIONS]
        await gate.set_mode(parent, mode="read-only", policy="never-ask", plan=True)
        run = await service.spawn(parent, SubagentRequest(prompt="look around", model="kid"))
        result = await run.wait()
        assert result.output == "read only here"
        inherited = run.child.options.extra[INHERITED_STATE]
        assert inherited == PermissionState(mode="read-only", policy="never-ask", plan=True)
        assert gate.state(run.child) == inherited
        assert data_json(run.child.session, "permission/mode") == [
            {"mode": "read-only", "policy": "never-ask", "plan": True}
        ]
        assert INHERITED_STATE not in parent.options.extra  # the parent's options are not changed
        assert gate.state(parent).mode == "read-only"


def test_inherited_state_reads_only_a_permission_state() -> None:
    class Options:
        def __init__(self, extra: object) -> None:
            self.extra = extra

    class Agent:
        def __init__(self, extra: object) -> None:
            self.options = Options(extra)

    state = PermissionState(mode="read-only")
    assert inherited_state(Agent({INHERITED_STATE: state})) == state
    assert inherited_state(Agent({INHERITED_STATE: "read-only"})) is None
    assert inherited_state(Agent(None)) is None
    assert inherited_state(object()) is None
    assert inherited_state(None) is None
