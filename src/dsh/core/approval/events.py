"""The ``approval/*`` and ``permission/*`` event catalog."""

from __future__ import annotations

from collections.abc import Awaitable

from dsh.core.approval.types import ApprovalDecision, ApprovalRequest, PermissionState
from dsh.kernel import EmitEvent, WaterfallEvent

APPROVAL_REQUEST: WaterfallEvent[[ApprovalRequest], Awaitable[ApprovalDecision]] = WaterfallEvent(
    "approval/request",
    doc=(
        "Waterfall asking whoever can answer: listeners get (request, next) and return an awaitable of "
        "an ApprovalDecision. A listener that owns the request's agent (its session, its channel) answers "
        "without calling next(); any other delegates with next(). With no listener, or when every one "
        "delegates, the answer is 'unavailable' (fail closed). Do not call it directly: "
        "ctx[APPROVALS].request() logs the pair, races the signal and contains failures."
    ),
)
"""See ``doc``: ``(request, next) -> Awaitable[ApprovalDecision]``."""

PERMISSION_CHANGED: EmitEvent[[object, PermissionState]] = EmitEvent(
    "permission/changed",
    doc=(
        "Emitted (agent, state) after an agent's session changed mode, policy, plan mode or grants "
        "(a permission/mode event or an allowed-always decision was logged). For UIs (an ACP "
        "current_mode_update). A raise reaches whoever made the change (the change stays logged)."
    ),
)
"""See ``doc``: ``(agent, state)`` after a change."""
