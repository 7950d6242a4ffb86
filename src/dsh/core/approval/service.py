"""The ``approvals`` service: ask whoever can answer, log the question and the answer, fail closed.

:meth:`ApprovalService.request` is the only way to ask. It logs ``approval/asked`` on
the asking agent's session, runs the ``approval/request`` waterfall raced against the
request's signal, and logs ``approval/decided``: exactly one decided for every asked,
whatever happens in between (an answerer that raises or returns something else
counts as ``unavailable``; the signal firing, or the caller being cancelled, as
``cancelled``, and a late answer is dropped). A request without an agent (or whose
agent has no session) is asked the same way but logs nothing.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Generator
from typing import Any

from msgspec import UNSET

from dsh.core.approval.events import APPROVAL_REQUEST
from dsh.core.approval.types import (
    APPROVAL_EVENT_TYPES,
    ApprovalAskedData,
    ApprovalAskedEvent,
    ApprovalDecidedData,
    ApprovalDecidedEvent,
    ApprovalDecision,
    ApprovalRequest,
)
from dsh.core.session import Session, register_event_type
from dsh.kernel import AbortSignal, Context, Disposer, Service, ServiceKey

UNAVAILABLE = ApprovalDecision(outcome="unavailable")
CANCELLED = ApprovalDecision(outcome="cancelled")


def register_approval_events(ctx: Context) -> None:
    """Make the approval and permission events typed while ``ctx``'s fiber lives."""

    def body() -> Generator[Disposer, None, None]:
        for cls in APPROVAL_EVENT_TYPES:
            yield register_event_type(cls)

    ctx.effect(body, "approval event types")


def session_of(agent: object | None) -> Session | None:
    """The session an agent logs to, or None (no agent, or something without a session)."""
    session = getattr(agent, "session", None)
    return session if isinstance(session, Session) else None


async def _nobody() -> ApprovalDecision:
    return UNAVAILABLE


async def _race(answer: Awaitable[Any], signal: AbortSignal | None) -> Any:
    """``answer``'s value, or CANCELLED when ``signal`` fires first (the answer is then cancelled)."""
    task: asyncio.Future[Any] = asyncio.ensure_future(answer)
    if signal is None:
        return await task
    waiter = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
    if not task.done() or task.cancelled():
        return CANCELLED
    return task.result()


class ApprovalService(Service):
    """Class plugin providing :data:`APPROVALS` (no config, no services needed)."""

    def __init__(self, ctx: Context, config: object = None) -> None:
        super().__init__(ctx, APPROVALS)
        register_approval_events(ctx)

    async def request(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask, and return the decision (never raises ``Exception``; see the module docstring).

        Cancelling the caller logs ``cancelled`` and then lets ``CancelledError`` through.
        """
        session = session_of(request.agent)
        call_id = UNSET if request.call_id is None else request.call_id
        decision = UNAVAILABLE
        try:
            if session is not None:
                data = ApprovalAskedData(
                    tool_name=request.tool_name, call_id=call_id, reason=request.reason, grant=request.grant
                )
                session.append(ApprovalAskedEvent, data)
            decision = await self._answer(request)
        except asyncio.CancelledError:
            decision = CANCELLED
            raise
        except Exception as error:
            self.own_ctx.logger.warn("approval for %s failed closed: %r", request.tool_name, error)
            decision = UNAVAILABLE
        finally:
            if session is not None:
                self._decided(session, request, call_id, decision)
        return decision

    async def _answer(self, request: ApprovalRequest) -> ApprovalDecision:
        signal = request.signal
        if signal is not None and signal.aborted:
            return CANCELLED
        try:
            answer: Any = self.ctx.waterfall(APPROVAL_REQUEST, request, inner=_nobody)
            if inspect.isawaitable(answer):
                answer = await _race(answer, signal)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            self.own_ctx.logger.warn("an answerer of approval/request raised: %r", error)
            return UNAVAILABLE
        if not isinstance(answer, ApprovalDecision):
            self.own_ctx.logger.warn("an answerer of approval/request returned %r, not an ApprovalDecision", answer)
            return UNAVAILABLE
        return answer

    def _decided(self, session: Session, request: ApprovalRequest, call_id: Any, decision: ApprovalDecision) -> None:
        grant = request.grant if decision.outcome == "allowed-always" else UNSET
        data = ApprovalDecidedData(call_id=call_id, outcome=decision.outcome, message=decision.message, grant=grant)
        try:
            session.append(ApprovalDecidedEvent, data)
        except Exception as error:  # the event is logged; a session/event listener raised after it
            self.own_ctx.logger.warn("a listener failed on approval/decided: %r", error)


APPROVALS: ServiceKey[ApprovalService] = ServiceKey("approvals")
"""The approvals service key."""
