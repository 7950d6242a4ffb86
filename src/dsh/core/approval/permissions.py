"""The ``permissions`` service: a session's mode, policy, plan mode and grants, folded from its log.

The state of a session is what its events say: the last ``permission/mode`` event
sets mode, policy and plan mode, and each ``approval/decided`` with outcome
``allowed-always`` adds its ``grant``. A session without a ``permission/mode`` event
has the service's default (the plugin's config) until :meth:`PermissionService.pin`
logs it. Because the events are in the log, a resumed session and a fork (which
copies its source's events up to the fork point) have the state the source had
there. The fold reads only the events appended since the previous call.
"""

from __future__ import annotations

import weakref

from msgspec import UNSET

from dsh.core.approval.events import PERMISSION_CHANGED
from dsh.core.approval.service import register_approval_events, session_of
from dsh.core.approval.types import (
    ApprovalDecidedEvent,
    ApprovalPolicy,
    PermissionMode,
    PermissionModeData,
    PermissionModeEvent,
    PermissionState,
)
from dsh.core.session import Session
from dsh.kernel import Context, Service, ServiceKey


class _Fold:
    """A session's state over its first ``read`` events; ``pinned`` once a ``permission/mode`` was seen."""

    __slots__ = ("pinned", "read", "state")

    def __init__(self, default: PermissionState) -> None:
        self.read = 0
        self.pinned = False
        self.state = default

    def update(self, session: Session) -> PermissionState:
        events = session.events
        state = self.state
        for event in events[self.read :]:
            if isinstance(event, PermissionModeEvent):
                data = event.data
                state = PermissionState(mode=data.mode, policy=data.policy, plan=data.plan, grants=state.grants)
                self.pinned = True
            elif isinstance(event, ApprovalDecidedEvent):
                decided = event.data
                grant = decided.grant
                if decided.outcome == "allowed-always" and grant is not UNSET and grant not in state.grants:
                    state = PermissionState(
                        mode=state.mode, policy=state.policy, plan=state.plan, grants=(*state.grants, grant)
                    )
        self.read = len(events)
        self.state = state
        return state


class PermissionService(Service):
    """Provides :data:`PERMISSIONS`; ``default`` is the state of a session that has logged none."""

    def __init__(self, ctx: Context, default: PermissionState | None = None) -> None:
        super().__init__(ctx, PERMISSIONS)
        register_approval_events(ctx)
        self.default = default if default is not None else PermissionState()
        self._folds: weakref.WeakKeyDictionary[Session, _Fold] = weakref.WeakKeyDictionary()

    def _fold(self, session: Session) -> _Fold:
        fold = self._folds.get(session)
        if fold is None:
            fold = self._folds[session] = _Fold(self.default)
        fold.update(session)
        return fold

    def state(self, agent: object | None) -> PermissionState:
        """The agent's session state now (:attr:`default` for no agent or no session)."""
        session = session_of(agent)
        if session is None:
            return self.default
        return self._fold(session).state

    def is_pinned(self, agent: object | None) -> bool:
        """True when the agent's session has logged a ``permission/mode`` event."""
        session = session_of(agent)
        return session is not None and self._fold(session).pinned

    def pin(self, agent: object | None) -> PermissionState:
        """Log the current state as ``permission/mode`` if the session has none yet; returns the state.

        The mode a session starts with is then its own, whatever later defaults say.
        """
        session = session_of(agent)
        if session is None:
            return self.default
        fold = self._fold(session)
        if not fold.pinned:
            state = fold.state
            session.append(
                PermissionModeEvent, PermissionModeData(mode=state.mode, policy=state.policy, plan=state.plan)
            )
            fold.update(session)
        return fold.state

    async def set_mode(
        self,
        agent: object | None,
        *,
        mode: PermissionMode | None = None,
        policy: ApprovalPolicy | None = None,
        plan: bool | None = None,
    ) -> PermissionState:
        """Change what the agent's session may do from now on (None keeps a field); returns the new state.

        Logs ``permission/mode`` (even when nothing changed: the log then says it was
        confirmed) and emits ``permission/changed``. Raises ``ValueError`` for an agent
        without a session (there is nowhere to keep the change).
        """
        session = session_of(agent)
        if session is None:
            raise ValueError("set_mode needs an agent with a session: the mode is kept in the session log")
        current = self._fold(session).state
        data = PermissionModeData(
            mode=current.mode if mode is None else mode,
            policy=current.policy if policy is None else policy,
            plan=current.plan if plan is None else plan,
        )
        session.append(PermissionModeEvent, data)
        state = self._fold(session).state
        self.ctx.emit(PERMISSION_CHANGED, agent, state)
        return state


PERMISSIONS: ServiceKey[PermissionService] = ServiceKey("permissions")
"""The permissions service key."""
