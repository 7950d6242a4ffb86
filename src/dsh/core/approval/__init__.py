"""Approvals and permissions: who may run what, asked through one seam, kept in the session log.

* :mod:`.types`: the vocabulary (:class:`ApprovalRequest`, :class:`ApprovalDecision`,
  :class:`PermissionState`, modes and policies) and the log events
  ``approval/asked``, ``approval/decided`` and ``permission/mode``.
* :mod:`.events`: ``approval/request`` (the answerers' waterfall) and
  ``permission/changed`` (for UIs).
* :mod:`.service`: the ``approvals`` service (:data:`APPROVALS`): ask, log, fail closed.
* :mod:`.permissions`: the ``permissions`` service (:data:`PERMISSIONS`): a session's
  state folded from its log, changed mid-session with ``set_mode``.

The policy that decides *when* to ask lives in the ``permissions`` plugin.
"""

from dsh.core.approval.events import APPROVAL_REQUEST, PERMISSION_CHANGED
from dsh.core.approval.permissions import INHERITED_STATE, PERMISSIONS, PermissionService, inherited_state
from dsh.core.approval.service import APPROVALS, ApprovalService, session_of
from dsh.core.approval.types import (
    ALLOWING_OUTCOMES,
    APPROVAL_EVENT_TYPES,
    APPROVAL_POLICIES,
    PERMISSION_MODES,
    ApprovalAskedData,
    ApprovalAskedEvent,
    ApprovalDecidedData,
    ApprovalDecidedEvent,
    ApprovalDecision,
    ApprovalOutcome,
    ApprovalPolicy,
    ApprovalRequest,
    PermissionMode,
    PermissionModeData,
    PermissionModeEvent,
    PermissionState,
)

__all__ = [
    "ALLOWING_OUTCOMES",
    "APPROVALS",
    "APPROVAL_EVENT_TYPES",
    "APPROVAL_POLICIES",
    "APPROVAL_REQUEST",
    "INHERITED_STATE",
    "PERMISSIONS",
    "PERMISSION_CHANGED",
    "PERMISSION_MODES",
    "ApprovalAskedData",
    "ApprovalAskedEvent",
    "ApprovalDecidedData",
    "ApprovalDecidedEvent",
    "ApprovalDecision",
    "ApprovalOutcome",
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApprovalService",
    "PermissionMode",
    "PermissionModeData",
    "PermissionModeEvent",
    "PermissionService",
    "PermissionState",
    "inherited_state",
    "session_of",
]
