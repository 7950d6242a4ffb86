"""ACP session modes over the ``permissions`` service: ``modes``, ``session/set_mode``, ``current_mode_update``.

An ACP mode is a named permission state (:data:`MODES`):

* ``ask`` — workspace-write, ask for anything else (the default);
* ``plan`` — plan mode: read and search only, until the user approves a plan;
* ``auto`` — workspace-write, decide by the mode alone without asking;
* ``read-only`` — read and search, ask for anything else;
* ``full-access`` — anything, without a sandbox.

Entering ``plan`` keeps the session's mode and policy (leaving it returns to them);
every other mode also leaves plan mode. A state no listed mode describes (say
workspace-write under ``never-ask``, set from the command line) is shown as one more
mode, ``<mode>+<policy>``, which can be selected too.

:class:`SessionModes` is the bridge's part: ``modes`` for the ``session/new`` and
``session/load`` answers, the ``session/set_mode`` handler (through
``PERMISSIONS.set_mode``, which logs the change in the session), and the
``permission/changed`` listener that tells the client of every change, wherever it came
from (``exit_plan_mode`` approved, a ``/plan`` command, ``session/set_mode`` itself),
with a ``current_mode_update`` when the mode id shown changed. Everything is looked up
when used: without the ``permissions`` service there are no ``modes`` and
``session/set_mode`` is an unknown method, as for a bridge that has no modes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from acp.exceptions import RequestError
from acp.schema import SetSessionModeRequest

from dsh.acp.rpc import invalid_params
from dsh.core.approval import (
    APPROVAL_POLICIES,
    PERMISSION_MODES,
    PERMISSIONS,
    ApprovalPolicy,
    PermissionMode,
    PermissionService,
    PermissionState,
)
from dsh.kernel import Context

SET_MODE: Final = "session/set_mode"


@dataclass(frozen=True)
class ModeDefinition:
    """One ACP mode: the permission state it selects (``plan`` keeps mode and policy as they are)."""

    id: str
    name: str
    description: str
    mode: PermissionMode | None
    policy: ApprovalPolicy | None
    plan: bool

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "description": self.description}


MODES: Final = (
    ModeDefinition(
        "ask", "Ask", "Edit files in the workspace; ask before anything else", "workspace-write", "ask", False
    ),
    ModeDefinition(
        "plan", "Plan", "Read and search only; present a plan to approve before changing anything", None, None, True
    ),
    ModeDefinition(
        "auto",
        "Auto",
        "Edit files in the workspace; decide the rest by the mode without asking",
        "workspace-write",
        "auto",
        False,
    ),
    ModeDefinition("read-only", "Read only", "Read and search; ask before any change", "read-only", "ask", False),
    ModeDefinition("full-access", "Full access", "Run anything without a sandbox", "full-access", "ask", False),
)
"""The modes every session offers, in picker order."""

_BY_ID: Final = {definition.id: definition for definition in MODES}


def _custom(mode: PermissionMode, policy: ApprovalPolicy) -> ModeDefinition:
    return ModeDefinition(
        f"{mode}+{policy}", f"{mode}, {policy}", f"Mode {mode} under the {policy} policy", mode, policy, False
    )


def definition_of(state: PermissionState) -> ModeDefinition:
    """The mode that describes ``state`` (a ``<mode>+<policy>`` one when no listed mode does)."""
    if state.plan:
        return _BY_ID["plan"]
    for definition in MODES:
        if not definition.plan and definition.mode == state.mode and definition.policy == state.policy:
            return definition
    return _custom(state.mode, state.policy)


def find_definition(mode_id: str) -> ModeDefinition | None:
    """The mode named ``mode_id``: a listed one, or a valid ``<mode>+<policy>``; None otherwise."""
    definition = _BY_ID.get(mode_id)
    if definition is not None:
        return definition
    mode, _, policy = mode_id.partition("+")
    for known_mode in PERMISSION_MODES:
        for known_policy in APPROVAL_POLICIES:
            if (mode, policy) == (known_mode, known_policy):
                return _custom(known_mode, known_policy)
    return None


def mode_state(state: PermissionState) -> dict[str, Any]:
    """The ACP ``SessionModeState`` of a session in ``state``."""
    current = definition_of(state)
    available = [definition.to_json() for definition in MODES]
    if current.id not in _BY_ID:
        available.append(current.to_json())
    return {"currentModeId": current.id, "availableModes": available}


AgentOf = Callable[[str], object | None]
"""``agent_of(session_id)``: the live agent of a bridge session, else None."""

SessionOf = Callable[[object | None], str | None]
"""``session_of(agent)``: the bridge session that owns exactly this agent, else None."""

Notify = Callable[[dict[str, Any]], None]
"""Sends one ``session/update`` params object; must not raise."""


class SessionModes:
    """The bridge's session modes; see the module docstring. ``ctx`` is the bridge's context."""

    def __init__(self, ctx: Context, agent_of: AgentOf, session_of: SessionOf, notify: Notify) -> None:
        self._ctx = ctx
        self._agent_of = agent_of
        self._session_of = session_of
        self._notify = notify
        self._shown: dict[str, str] = {}

    def _service(self) -> PermissionService | None:
        return self._ctx.get(PERMISSIONS)

    def modes_for(self, session_id: str, agent: object) -> dict[str, Any]:
        """``{"modes": ...}`` for a session answer, or ``{}`` without the permissions service."""
        service = self._service()
        if service is None:
            return {}
        modes = mode_state(service.state(agent))
        self._shown[session_id] = modes["currentModeId"]
        return {"modes": modes}

    async def set_mode(self, raw: Any) -> dict[str, Any]:
        """``session/set_mode``: put the session in the mode named ``modeId``; answers ``{}``."""
        service = self._service()
        if service is None:
            raise RequestError.method_not_found(SET_MODE)
        params = SetSessionModeRequest.model_validate(raw)
        agent = self._agent_of(params.session_id)
        if agent is None:
            raise invalid_params(f"unknown session: {params.session_id}")
        definition = find_definition(params.mode_id)
        if definition is None:
            names = ", ".join(known.id for known in MODES)
            raise invalid_params(f"unknown mode: {params.mode_id} (the modes are {names})")
        await service.set_mode(agent, mode=definition.mode, policy=definition.policy, plan=definition.plan)
        return {}

    def on_changed(self, agent: object, state: PermissionState) -> None:
        """``permission/changed``: tell the owning session's client when its mode id changed."""
        session_id = self._session_of(agent)
        if session_id is None:
            return
        current = definition_of(state).id
        if self._shown.get(session_id) == current:
            return
        self._shown[session_id] = current
        self._notify(
            {"sessionId": session_id, "update": {"sessionUpdate": "current_mode_update", "currentModeId": current}}
        )
