"""The permissions service: state folded from the log, pinned, changed mid-session, seen by forks."""

from __future__ import annotations

from typing import Any

import pytest

from dsh.core.approval import (
    PERMISSION_CHANGED,
    PERMISSIONS,
    ApprovalDecidedData,
    ApprovalDecidedEvent,
    PermissionModeEvent,
    PermissionService,
    PermissionState,
)
from dsh.core.session import Session
from dsh.kernel import Context


class Owner:
    def __init__(self, session: Session) -> None:
        self.session = session


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


async def test_default_until_pinned_then_the_log_decides(ctx: Context) -> None:
    service = ctx[PERMISSIONS]
    owner = Owner(Session("s"))
    assert service.state(None) == PermissionState(mode="read-only", policy="never-ask")
    assert service.state(owner).mode == "read-only"
    assert not service.is_pinned(owner)
    assert not service.is_pinned(None)
    assert service.pin(None).mode == "read-only"
    assert service.pin(owner).mode == "read-only"
    assert service.pin(owner).mode == "read-only"  # pinned once
    assert [type(e) for e in owner.session.events] == [PermissionModeEvent]
    service.default = PermissionState(mode="full-access")
    assert service.state(owner).mode == "read-only"
    assert service.is_pinned(owner)


async def test_set_mode_logs_emits_and_keeps_grants(ctx: Context) -> None:
    service = ctx[PERMISSIONS]
    session = Session("s")
    owner = Owner(session)
    changes: list[PermissionState] = []
    ctx.on(PERMISSION_CHANGED, lambda agent, state: changes.append(state))
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
    fork = Owner(Session("f", seed=list(session.events)))
    assert service.state(fork) == state
    with pytest.raises(ValueError, match="needs an agent with a session"):
        await service.set_mode(None, mode="full-access")


async def test_default_default_is_workspace_write_ask() -> None:
    root = Context()

    class Bare:
        def __init__(self, ctx: Context, config: object = None) -> None:
            PermissionService(ctx)

    await root.plugin(Bare)
    assert root[PERMISSIONS].state(None) == PermissionState(mode="workspace-write", policy="ask")
    await root.dispose()
