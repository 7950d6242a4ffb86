"""The ACP answerer of ``approval/request``: ask the editor with ``session/request_permission``.

:class:`PermissionAnswerer` is an ``approval/request`` listener the bridge registers
on its fiber (it goes when the bridge goes: the requests then fail closed). It
answers only for an agent one of the bridge's sessions owns (the exact agent object)
and a request tied to a tool call; anything else is delegated with ``next()``.

**The question.** ``session/request_permission`` carries the session id, the tool
call as the session's card already shows it (the same ``toolCallId``, the title,
kind and text content the tool presents, its ``rawInput``; the request's reason and
grant under ``_meta``) and the options :data:`ALLOW_ONCE`, :data:`ALLOW_ALWAYS` (only when the
request has a grant to give) and :data:`REJECT_ONCE`.

**The answer.** The selected option maps to ``allowed-once``, ``allowed-always`` or
``rejected``; an option the bridge did not offer is ``rejected`` (never a grant); an
answer ``{"outcome": "cancelled"}`` is ``cancelled``; a client error response, a
malformed answer or a closed connection is ``unavailable``. A cancelled turn
(``session/cancel``) fires the request's signal: the approvals service then settles
it ``cancelled`` and cancels this listener, which forgets the client request (its
late answer is ignored).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from acp.schema import DeniedOutcome, RequestPermissionRequest, RequestPermissionResponse
from pydantic import ValidationError

from dsh.acp.codec import harness_block_to_acp_content
from dsh.acp.stream import ToolLookup, ToolPresenter
from dsh.core.approval import ApprovalDecision, ApprovalOutcome, ApprovalRequest
from dsh.kernel import Logger

REQUEST_PERMISSION: Final = "session/request_permission"


@dataclass(frozen=True)
class PermissionChoice:
    """One option offered to the editor and the outcome it stands for."""

    option_id: str
    name: str
    kind: str
    outcome: ApprovalOutcome

    def to_json(self) -> dict[str, Any]:
        return {"optionId": self.option_id, "name": self.name, "kind": self.kind}


ALLOW_ONCE = PermissionChoice("allow-once", "Allow once", "allow_once", "allowed-once")
ALLOW_ALWAYS = PermissionChoice("allow-always", "Always allow", "allow_always", "allowed-always")
REJECT_ONCE = PermissionChoice("reject-once", "Reject", "reject_once", "rejected")

UNAVAILABLE: Final = ApprovalDecision(outcome="unavailable")
CANCELLED: Final = ApprovalDecision(outcome="cancelled")
REJECTED: Final = ApprovalDecision(outcome="rejected")


def choices_for(request: ApprovalRequest) -> tuple[PermissionChoice, ...]:
    """The options offered for ``request``: "always" only when it has a grant to give."""
    if not request.grant:
        return (ALLOW_ONCE, REJECT_ONCE)
    always = PermissionChoice(
        ALLOW_ALWAYS.option_id, f"Always allow {request.grant}", ALLOW_ALWAYS.kind, ALLOW_ALWAYS.outcome
    )
    return (ALLOW_ONCE, always, REJECT_ONCE)


def tool_call_card(tools: ToolLookup | None, request: ApprovalRequest, warn: Callable[[str], None]) -> dict[str, Any]:
    """The ``toolCall`` of the question: the asked call as its tool presents it."""
    assert request.call_id is not None  # only requests tied to a call are answered here
    view = ToolPresenter(tools, warn).call(request.call_id, request.tool_name, json.dumps(request.arguments))
    card: dict[str, Any] = {"toolCallId": request.call_id, "title": view.title, "kind": view.kind}
    content = [harness_block_to_acp_content(block) for block in view.content or ()]
    if any(item is not None for item in content):
        card["content"] = [{"type": "content", "content": item} for item in content if item is not None]
    if view.raw_input is not None:
        card["rawInput"] = view.raw_input
    card["_meta"] = {"reason": request.reason, "grant": request.grant}
    return card


def permission_params(
    session_id: str, request: ApprovalRequest, tools: ToolLookup | None, warn: Callable[[str], None]
) -> dict[str, Any]:
    """The params of ``session/request_permission`` for ``request`` asked in ``session_id``."""
    params = {
        "sessionId": session_id,
        "toolCall": tool_call_card(tools, request, warn),
        "options": [choice.to_json() for choice in choices_for(request)],
    }
    RequestPermissionRequest.model_validate(params)  # the question is what the schema says it is
    return params


def decision_from_answer(answer: Any, offered: tuple[PermissionChoice, ...]) -> ApprovalDecision:
    """The decision a ``RequestPermissionResponse`` stands for (see the module docstring)."""
    try:
        outcome = RequestPermissionResponse.model_validate(answer).outcome
    except ValidationError:
        return UNAVAILABLE
    if isinstance(outcome, DeniedOutcome):
        return CANCELLED
    for choice in offered:
        if choice.option_id == outcome.option_id:
            return ApprovalDecision(outcome=choice.outcome)
    return REJECTED


Ask = Callable[[str, Any], Awaitable[Any]]
"""``ask(method, params) -> result``: one request to the client (the bridge's connection)."""

Owner = Callable[[object | None], str | None]
"""``owner(agent) -> session id``: the bridge session that owns exactly this agent, else None."""


class PermissionAnswerer:
    """The bridge's ``approval/request`` listener; see the module docstring."""

    def __init__(self, ask: Ask, owner: Owner, tools: ToolLookup | None, logger: Logger) -> None:
        self._ask = ask
        self._owner = owner
        self._tools = tools
        self._logger = logger

    def _warn(self, message: str) -> None:
        self._logger.warn("%s", message)

    def on_request(
        self, request: ApprovalRequest, next: Callable[[], Awaitable[ApprovalDecision]]
    ) -> Awaitable[ApprovalDecision]:
        session_id = self._owner(request.agent)
        if session_id is None or request.call_id is None:
            return next()
        return self._ask_client(session_id, request)

    async def _ask_client(self, session_id: str, request: ApprovalRequest) -> ApprovalDecision:
        offered = choices_for(request)
        params = permission_params(session_id, request, self._tools, self._warn)
        try:
            answer = await self._ask(REQUEST_PERMISSION, params)
        except Exception as error:
            self._logger.warn("acp: %s for %s failed, failing closed: %s", REQUEST_PERMISSION, request.tool_name, error)
            return UNAVAILABLE
        return decision_from_answer(answer, offered)
