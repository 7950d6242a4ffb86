"""The permissions service: state folded from the log, pinned at turn start, changed mid-session."""

from __future__ import annotations

from typing import Any

import pytest

from dsh.core.agent import AGENT_TURN_START
from dsh.core.approval import (
    PERMISSION_CHANGED,
    PERMISSIONS,
    ApprovalDecidedData,
    ApprovalDecidedEvent,
    PermissionModeEvent,
    PermissionService,
    PermissionState,
)
from dsh.core.llm import UserSource
from dsh.core.session import (
    CompletedReason,
    MessageTrigger,
    Session,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
)
from dsh.kernel import Context


class Owner:
    def __init__(self, session: Session) -> None:
        self.session = session


def open_turn(session: Session, turn: int = 1) -> None:
    session.append(TurnStartEvent, TurnStartData(turn=turn, trigger=MessageTrigger(source=UserSource())))


def close_turn(session: Session, turn: int = 1) -> None:
    session.append(TurnEndEvent, TurnEndData(turn=turn, reason=CompletedReason()))


def modes(session: Session) -> list[tuple[str, str, bool]]:
    return [(e.data.mode, e.data.policy, e.data.plan) for e in session.events if isinstance(e, PermissionModeEvent)]


class Plugin:
    """A class plugin providing the service with a read-only default."""

    def __init__(self, ctx: Context, config: object = None) -> None:
        PermissionService(ctx, PermissionState(mode="read-only", policy="never-ask"))


@pytest.fixture
async def ctx() -> Any:
    root = Context()
    await root.plugin(Plugin)
    yield root
    await root.dispose()


async def test_default_until_pinned_at_turn_start(ctx: Context) -> None:
    service = ctx[PERMISSIONS]
    owner = Owner(Session("s"))
    assert service.state(None) == PermissionState(mode="read-only", policy="never-ask")
    assert service.state(owner).mode == "read-only"
    assert not service.is_pinned(owner)
    assert not service.is_pinned(None)
    assert service.pin(None).mode == "read-only"
    assert service.pin(owner).mode == "read-only"  # no turn open: nothing logged
    assert modes(owner.session) == []
    open_turn(owner.session)
    ctx.emit(AGENT_TURN_START, owner, 1)  # type: ignore[arg-type]
    ctx.emit(AGENT_TURN_START, owner, 1)  # type: ignore[arg-type]  # pinned once
    assert modes(owner.session) == [("read-only", "never-ask", False)]
    service.default = PermissionState(mode="full-access")
    assert service.state(owner).mode == "read-only"
    assert service.is_pinned(owner)


async def test_set_mode_in_a_turn_logs_and_keeps_grants(ctx: Context) -> None:
    service = ctx[PERMISSIONS]
    session = Session("s")
    owner = Owner(session)
    changes: list[PermissionState] = []
    ctx.on(PERMISSION_CHANGED, lambda agent, state: changes.append(state))
    open_turn(session)
    session.append(ApprovalDecidedEvent, ApprovalDecidedData(outcome="allowed-always", grant="write"))
    session.append(ApprovalDecidedEvent, ApprovalDecidedData(outcome="allowed-always", grant="write"))
    session.append(ApprovalDecidedEvent, ApprovalDecidedData(outcome="allowed-once"))
    session.append("other/thing", {"x": 1})
    session.append(ApprovalDecidedEvent, ApprovalDecidedData(outcome="rejected", grant="bash(rm*)"))
    state = await service.set_mode(owner, mode="workspace-write", plan=True)
    assert state == PermissionState(mode="workspace-write", policy="never-ask", plan=True, grants=("write",))
    assert changes == [state]
    state = await service.set_mode(owner, policy="auto")
    assert state == PermissionState(mode="workspace-write", policy="auto", plan=True, grants=("write",))
    assert modes(session) == [("workspace-write", "never-ask", True), ("workspace-write", "auto", True)]
    fork = Owner(Session("f", seed=list(session.events)))
    assert service.state(fork) == state
    with pytest.raises(ValueError, match="needs an agent with a session"):
        await service.set_mode(None, mode="full-access")


async def test_set_mode_between_turns_is_pending_until_the_next_turn(ctx: Context) -> None:
    service = ctx[PERMISSIONS]
    session = Session("s")
    owner = Owner(session)
    changes: list[PermissionState] = []
    ctx.on(PERMISSION_CHANGED, lambda agent, state: changes.append(state))
    open_turn(session)
    ctx.emit(AGENT_TURN_START, owner, 1)  # type: ignore[arg-type]
    close_turn(session)
    state = await service.set_mode(owner, mode="full-access", policy="ask")
    assert state.mode == "full-access"
    assert service.state(owner) == state
    assert changes == [state]
    assert modes(session) == [("read-only", "never-ask", False)]
    await service.set_mode(owner, plan=True)
    open_turn(session, 2)
    ctx.emit(AGENT_TURN_START, owner, 2)  # type: ignore[arg-type]
    assert modes(session) == [("read-only", "never-ask", False), ("full-access", "ask", True)]
    assert service.state(owner) == PermissionState(mode="full-access", policy="ask", plan=True)


async def test_default_default_is_workspace_write_ask() -> None:
    root = Context()

    class Bare:
        def __init__(self, ctx: Context, config: object = None) -> None:
            PermissionService(ctx)

    await root.plugin(Bare)
    assert root[PERMISSIONS].state(None) == PermissionState(mode="workspace-write", policy="ask")
    await root.dispose()
