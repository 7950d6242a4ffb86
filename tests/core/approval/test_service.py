"""The approvals seam: one decided per asked, fail closed, cancellation, first-wins delegation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from dsh.core.approval import (
    APPROVAL_REQUEST,
    APPROVALS,
    ApprovalAskedEvent,
    ApprovalDecidedEvent,
    ApprovalDecision,
    ApprovalRequest,
    ApprovalService,
)
from dsh.core.session import Session, SessionEvent, parse_session_event_line, session_event_line
from dsh.kernel import AbortController, Context

Answer = Callable[[ApprovalRequest, Callable[[], Awaitable[ApprovalDecision]]], Awaitable[ApprovalDecision]]


class Owner:
    """Something with a session, as an agent has."""

    def __init__(self, session: Session) -> None:
        self.session = session


def request(owner: object | None, signal: Any = None, call_id: str | None = "c1") -> ApprovalRequest:
    return ApprovalRequest(
        agent=owner,
        tool_name="write",
        call_id=call_id,
        arguments={"path": "/etc/x"},
        reason="write outside the workspace: /etc/x",
        grant="write",
        signal=signal,
    )


def pairs(session: Session) -> list[SessionEvent]:
    return [e for e in session.events if type(e) in (ApprovalAskedEvent, ApprovalDecidedEvent)]


@pytest.fixture
async def ctx() -> Any:
    root = Context()
    await root.plugin(ApprovalService)
    yield root
    await root.dispose()


async def test_no_answerer_is_unavailable_and_logged(ctx: Context) -> None:
    session = Session("s")
    decision = await ctx[APPROVALS].request(request(Owner(session)))
    assert decision == ApprovalDecision(outcome="unavailable")
    assert not decision.allowed
    asked, decided = pairs(session)
    assert isinstance(asked, ApprovalAskedEvent)
    assert isinstance(decided, ApprovalDecidedEvent)
    assert session_event_line(asked) == (
        '{"type":"approval/asked","seq":0,"time":' + str(asked.time) + ',"data":{"toolName":"write",'
        '"callId":"c1","reason":"write outside the workspace: /etc/x","grant":"write"}}'
    )
    assert decided.data.outcome == "unavailable"
    assert decided.data.call_id == "c1"
    assert parse_session_event_line(session_event_line(decided)) == decided


async def test_first_owner_answers_others_delegate(ctx: Context) -> None:
    session = Session("s")
    mine = Owner(session)
    seen: list[str] = []

    async def foreign(req: ApprovalRequest, next: Any) -> ApprovalDecision:
        seen.append("foreign")
        return await next()  # type: ignore[no-any-return]

    async def owner(req: ApprovalRequest, next: Any) -> ApprovalDecision:
        if req.agent is not mine:
            return await next()  # type: ignore[no-any-return]
        seen.append("owner")
        return ApprovalDecision(outcome="allowed-always", message="ok")

    ctx.on(APPROVAL_REQUEST, foreign)
    ctx.on(APPROVAL_REQUEST, owner)
    decision = await ctx[APPROVALS].request(request(mine))
    assert decision.allowed
    assert decision.message == "ok"
    assert seen == ["foreign", "owner"]
    decided = pairs(session)[1]
    assert isinstance(decided, ApprovalDecidedEvent)
    assert decided.data.grant == "write"
    assert decided.data.message == "ok"
    other = Session("o")
    assert (await ctx[APPROVALS].request(request(Owner(other)))).outcome == "unavailable"


@pytest.mark.parametrize("kind", ["raise-sync", "raise-async", "bad-value", "self-cancel", "sync-value"])
async def test_answerer_failures_fail_closed(ctx: Context, kind: str) -> None:
    session = Session("s")

    def sync_raise(req: ApprovalRequest, next: Any) -> Any:
        raise RuntimeError("boom")

    async def async_raise(req: ApprovalRequest, next: Any) -> Any:
        raise RuntimeError("boom")

    async def bad(req: ApprovalRequest, next: Any) -> Any:
        return "yes"

    async def self_cancel(req: ApprovalRequest, next: Any) -> Any:
        raise asyncio.CancelledError

    def sync_value(req: ApprovalRequest, next: Any) -> Any:
        return ApprovalDecision(outcome="allowed-once")

    listener = {
        "raise-sync": sync_raise,
        "raise-async": async_raise,
        "bad-value": bad,
        "self-cancel": self_cancel,
        "sync-value": sync_value,
    }[kind]
    ctx.on(APPROVAL_REQUEST, listener)
    controller = AbortController()
    decision = await ctx[APPROVALS].request(request(Owner(session), controller.signal))
    expected = {"raise-sync": "unavailable", "raise-async": "unavailable", "bad-value": "unavailable"}
    expected |= {"self-cancel": "cancelled", "sync-value": "allowed-once"}
    assert decision.outcome == expected[kind]
    assert len(pairs(session)) == 2


async def test_signal_cancels_a_pending_answer(ctx: Context) -> None:
    session = Session("s")
    controller = AbortController()
    started = asyncio.Event()
    finished: list[str] = []

    async def hang(req: ApprovalRequest, next: Any) -> ApprovalDecision:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            finished.append("cancelled")
            raise
        raise AssertionError("unreachable")  # pragma: no cover - the wait above never ends

    ctx.on(APPROVAL_REQUEST, hang)
    pending = asyncio.ensure_future(ctx[APPROVALS].request(request(Owner(session), controller.signal)))
    await started.wait()
    controller.abort("cancelled")
    assert (await pending).outcome == "cancelled"
    assert finished == ["cancelled"]
    decided = pairs(session)[1]
    assert isinstance(decided, ApprovalDecidedEvent)
    assert decided.data.outcome == "cancelled"


async def test_already_aborted_signal_never_asks(ctx: Context) -> None:
    session = Session("s")
    asked: list[object] = []
    ctx.on(APPROVAL_REQUEST, lambda req, next: asked.append(req))
    controller = AbortController()
    controller.abort()
    assert (await ctx[APPROVALS].request(request(Owner(session), controller.signal))).outcome == "cancelled"
    assert asked == []
    assert len(pairs(session)) == 2


async def test_caller_cancelled_logs_cancelled_then_propagates(ctx: Context) -> None:
    session = Session("s")
    started = asyncio.Event()

    async def hang(req: ApprovalRequest, next: Any) -> ApprovalDecision:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")  # pragma: no cover - the wait above never ends

    ctx.on(APPROVAL_REQUEST, hang)
    pending = asyncio.ensure_future(ctx[APPROVALS].request(request(Owner(session), call_id=None)))
    await started.wait()
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    asked, decided = pairs(session)
    assert isinstance(decided, ApprovalDecidedEvent)
    assert decided.data.outcome == "cancelled"
    assert isinstance(asked, ApprovalAskedEvent)
    assert "callId" not in session_event_line(asked)


async def test_without_a_session_nothing_is_logged(ctx: Context) -> None:
    async def allow(req: ApprovalRequest, next: Any) -> ApprovalDecision:
        return ApprovalDecision(outcome="allowed-once")

    ctx.on(APPROVAL_REQUEST, allow)
    assert (await ctx[APPROVALS].request(request(None))).outcome == "allowed-once"
    assert (await ctx[APPROVALS].request(request(object()))).outcome == "allowed-once"


async def test_a_failing_log_listener_still_gets_one_decided(ctx: Context) -> None:
    session = Session("s")
    failures: list[str] = []

    def hook(s: Session, event: SessionEvent) -> None:
        failures.append(event.type)
        raise RuntimeError("disk full")

    session.on_append = hook
    assert (await ctx[APPROVALS].request(request(Owner(session)))).outcome == "unavailable"
    assert failures == ["approval/asked", "approval/decided"]
    assert len(pairs(session)) == 2


async def test_unloading_drops_the_event_types() -> None:
    root = Context()
    fiber = await root.plugin(ApprovalService)
    line = '{"type":"approval/asked","seq":0,"time":1,"data":{"toolName":"t","reason":"r","grant":"t"}}'
    assert isinstance(parse_session_event_line(line), ApprovalAskedEvent)
    await fiber.dispose()
    assert not isinstance(parse_session_event_line(line), ApprovalAskedEvent)
    await root.dispose()
