"""The approval and permission vocabulary: requests, decisions, modes and their log events.

A tool call the session's permission mode does not cover is *asked*: an
:class:`ApprovalRequest` goes to whoever can answer (the ``approval/request``
waterfall) and comes back as an :class:`ApprovalDecision`. Both ends are logged
(``approval/asked``, ``approval/decided``), never shown to the model. The mode, the
policy and plan mode of a session are logged as ``permission/mode``; the "allow
always" grants are the ``grant`` of each ``approval/decided`` with outcome
``allowed-always``. Folding those events gives the session's
:class:`PermissionState`, the same after a resume or a fork as live.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from msgspec import UNSET, Struct, UnsetType

from dsh.core.llm.types import CallId
from dsh.core.session.types import SessionEventBase
from dsh.kernel import AbortSignal

ApprovalOutcome: TypeAlias = Literal["allowed-once", "allowed-always", "rejected", "cancelled", "unavailable"]
"""``allowed-once`` runs this call; ``allowed-always`` runs it and grants its scope for the session;
``rejected`` is a "no" (with an optional message); ``cancelled`` means the turn was cancelled
(or the prompt dismissed) while asking; ``unavailable`` means nobody could answer (fail closed)."""

ALLOWING_OUTCOMES: frozenset[str] = frozenset(("allowed-once", "allowed-always"))
"""The outcomes that let the asked call run."""

PermissionMode: TypeAlias = Literal["read-only", "workspace-write", "full-access"]
"""What a session may do without asking: ``read-only`` reads and searches; ``workspace-write``
(the default) also writes inside the workspace and the temp directory; ``full-access`` anything."""

ApprovalPolicy: TypeAlias = Literal["ask", "auto", "never-ask"]
"""What happens to a call outside the mode: ``ask`` (the default) asks an answerer; ``auto``
decides by the mode alone (what only ``full-access`` could do is rejected, the rest allowed);
``never-ask`` rejects it."""

PERMISSION_MODES: tuple[PermissionMode, ...] = ("read-only", "workspace-write", "full-access")
APPROVAL_POLICIES: tuple[ApprovalPolicy, ...] = ("ask", "auto", "never-ask")


@dataclass(frozen=True)
class ApprovalRequest:
    """One question: may this call run? It holds live objects, so it is a frozen dataclass.

    ``agent`` is the asking agent (None outside an agent: nothing is logged then);
    ``call_id`` the exact tool call (None for a request not tied to one);
    ``arguments`` the parsed tool arguments, for a card; ``reason`` says in words what
    and why (``write outside the workspace: /etc/x``); ``grant`` is the scope an
    ``allowed-always`` answer grants for the rest of the session (a rule pattern such
    as ``bash(git push*)`` or ``write``; empty: no "always" is offered); ``signal``
    fires when the asking turn is cancelled, which settles the request ``cancelled``;
    ``needs`` is the permission mode under which the call would have run without
    asking (None: none would, or it does not apply), for hints such as a CLI flag.
    """

    agent: object | None
    tool_name: str
    call_id: CallId | None
    arguments: Any
    reason: str
    grant: str
    signal: AbortSignal | None = None
    needs: PermissionMode | None = None


class ApprovalDecision(Struct, frozen=True, rename="camel"):
    """An answer: ``message`` is the user's optional words to the model (shown in the tool's result)."""

    outcome: ApprovalOutcome
    message: str | UnsetType = UNSET

    @property
    def allowed(self) -> bool:
        """True for ``allowed-once`` and ``allowed-always``."""
        return self.outcome in ALLOWING_OUTCOMES


class PermissionState(Struct, frozen=True, rename="camel"):
    """A session's permissions now: its mode, policy, plan mode and the granted scopes (in grant order)."""

    mode: PermissionMode = "workspace-write"
    policy: ApprovalPolicy = "ask"
    plan: bool = False
    grants: tuple[str, ...] = ()


# --------------------------------------------------------------- log events
class ApprovalAskedData(Struct, frozen=True, kw_only=True, rename="camel"):
    """``approval/asked``: a call was put to the answerers."""

    tool_name: str
    call_id: CallId | UnsetType = UNSET
    reason: str
    grant: str


class ApprovalDecidedData(Struct, frozen=True, kw_only=True, rename="camel"):
    """``approval/decided``: the answer to the ``approval/asked`` just before it with the same call.

    ``grant`` is present when ``outcome`` is ``allowed-always``: the scope granted
    for the rest of the session.
    """

    call_id: CallId | UnsetType = UNSET
    outcome: ApprovalOutcome
    message: str | UnsetType = UNSET
    grant: str | UnsetType = UNSET


class PermissionModeData(Struct, frozen=True, kw_only=True, rename="camel"):
    """``permission/mode``: from here on the session runs in ``mode`` under ``policy`` (and plan mode)."""

    mode: PermissionMode
    policy: ApprovalPolicy
    plan: bool = False


class ApprovalAskedEvent(SessionEventBase, frozen=True, tag="approval/asked"):
    data: ApprovalAskedData


class ApprovalDecidedEvent(SessionEventBase, frozen=True, tag="approval/decided"):
    data: ApprovalDecidedData


class PermissionModeEvent(SessionEventBase, frozen=True, tag="permission/mode"):
    data: PermissionModeData


APPROVAL_EVENT_TYPES: tuple[type[SessionEventBase], ...] = (
    ApprovalAskedEvent,
    ApprovalDecidedEvent,
    PermissionModeEvent,
)
"""The event classes the approval services register while they are loaded."""
