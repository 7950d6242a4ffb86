"""The ``permissions`` service: a session's mode, policy, plan mode and grants, folded from its log.

The state of a session is what its events say: the last ``permission/mode`` event
sets mode, policy and plan mode, and each ``approval/decided`` with outcome
``allowed-always`` adds its ``grant``. A session without a ``permission/mode`` event
has the service's default (the plugin's config) until it is pinned: at the start of
each turn (``agent/turn-start``) the service logs the state of a session that has
none yet, so the mode a session started with stays its own whatever later defaults
say. Because the events are in the log, a resumed session and a fork (which copies
its source's events up to the fork point) have the state the source had there.

Session events belong inside a turn, so a change made while no turn is open (an
editor switching modes between prompts) is *pending*: :meth:`PermissionService.state`
returns it and ``permission/changed`` fires at once, and it is logged at the next
turn start (a process that ends before then loses it; nothing ran under it). The
fold reads only the events appended since the previous call.
"""

from __future__ import annotations

import weakref

from msgspec import UNSET

from dsh.core.agent.events import AGENT_TURN_START
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
from dsh.core.session import Session, is_turn_open
from dsh.kernel import Context, Service, ServiceKey

INHERITED_STATE = "permissions"
"""The ``AgentOptions.extra`` key of the :class:`PermissionState` a child agent starts from."""


def inherited_state(agent: object | None) -> PermissionState | None:
    """The state ``agent``'s options say it starts from (a sub-agent's parent's), or None."""
    options = getattr(agent, "options", None)
    extra = getattr(options, "extra", None)
    state = extra.get(INHERITED_STATE) if isinstance(extra, dict) else None
    return state if isinstance(state, PermissionState) else None


class _Fold:
    """A session's state over its first ``read`` events; ``pinned`` once a ``permission/mode`` was seen."""

    __slots__ = ("pending", "pinned", "read", "state")

    def __init__(self, default: PermissionState) -> None:
        self.read = 0
        self.pinned = False
        self.state = default
        self.pending: PermissionModeData | None = None

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
        ctx.on(AGENT_TURN_START, lambda agent, turn: self.pin(agent))

    def _fold(self, session: Session, agent: object | None) -> _Fold:
        fold = self._folds.get(session)
        if fold is None:
            fold = self._folds[session] = _Fold(inherited_state(agent) or self.default)
        fold.update(session)
        return fold

    def state(self, agent: object | None) -> PermissionState:
        """The agent's session state now, a pending change included (:attr:`default` without a session)."""
        session = session_of(agent)
        if session is None:
            return self.default
        fold = self._fold(session, agent)
        pending = fold.pending
        if pending is None:
            return fold.state
        return PermissionState(mode=pending.mode, policy=pending.policy, plan=pending.plan, grants=fold.state.grants)

    def is_pinned(self, agent: object | None) -> bool:
        """True when the agent's session has logged a ``permission/mode`` event."""
        session = session_of(agent)
        return session is not None and self._fold(session, agent).pinned

    def pin(self, agent: object | None) -> PermissionState:
        """Log a pending change, or the state of a session that has logged none; returns the state.

        Called at every turn start; a session without an open turn is left as it is.
        """
        session = session_of(agent)
        if session is None:
            return self.default
        fold = self._fold(session, agent)
        if (fold.pending is not None or not fold.pinned) and is_turn_open(session):
            state = self.state(agent)
            fold.pending = None
            session.append(
                PermissionModeEvent, PermissionModeData(mode=state.mode, policy=state.policy, plan=state.plan)
            )
            fold.update(session)
        return self.state(agent)

    async def set_mode(
        self,
        agent: object | None,
        *,
        mode: PermissionMode | None = None,
        policy: ApprovalPolicy | None = None,
        plan: bool | None = None,
    ) -> PermissionState:
        """Change what the agent's session may do from now on (None keeps a field); returns the new state.

        Inside an open turn it logs ``permission/mode`` at once (even when nothing
        changed: the log then says it was confirmed); otherwise the change is pending
        until the next turn start (see the module docstring). Either way it emits
        ``permission/changed``. Raises ``ValueError`` for an agent without a session
        (there is nowhere to keep the change).
        """
        session = session_of(agent)
        if session is None:
            raise ValueError("set_mode needs an agent with a session: the mode is kept in the session log")
        current = self.state(agent)
        data = PermissionModeData(
            mode=current.mode if mode is None else mode,
            policy=current.policy if policy is None else policy,
            plan=current.plan if plan is None else plan,
        )
        fold = self._fold(session, agent)
        if is_turn_open(session):
            fold.pending = None
            session.append(PermissionModeEvent, data)
        else:
            fold.pending = data
        state = self.state(agent)
        self.ctx.emit(PERMISSION_CHANGED, agent, state)
        return state


PERMISSIONS: ServiceKey[PermissionService] = ServiceKey("permissions")
"""The permissions service key."""
