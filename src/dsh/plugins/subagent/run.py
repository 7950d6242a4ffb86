"""One child of the ``subagent`` plugin: its handle, its driver, its outcome.

A :class:`Run` owns a child fiber (``subagent-child``) through which the child agent
was created, so disposing that fiber disposes the child agent and its session. The
driver sends the prompt, waits for the child to go idle, disposes the fiber and
settles the run; it settles even when it is cancelled itself (its owner's disposal),
so every run ends with a result and waiters never hang.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import msgspec
from msgspec import UNSET

from dsh.core.agent import Agent
from dsh.core.llm import AgentSource, text, text_of
from dsh.core.session import (
    AssistantMessageEvent,
    CompletedReason,
    Session,
    TurnEndEvent,
    TurnEndReason,
    TurnStartEvent,
)
from dsh.core.subagent import SubagentOutcome, SubagentRequest, SubagentResult, SubagentStatus
from dsh.core.usage import summarize_usage
from dsh.kernel import Fiber
from dsh.plugins.subagent.policy import ToolFilter


def reason_kind(reason: TurnEndReason) -> str:
    """A turn-end reason's ``kind`` (also of a variant this version does not know)."""
    if isinstance(reason, msgspec.Struct):
        return str(reason.__struct_config__.tag)
    return str(msgspec.json.decode(reason).get("kind"))  # an unknown variant is an object with a kind


def outcome_of(session: Session, cancelled: bool) -> tuple[SubagentOutcome, str, TurnEndReason | None]:
    """The status, final answer and last turn-end reason a child's log shows.

    The answer is the text of the last assistant message after the last
    ``turn/start`` (``""`` when that turn logged none).
    """
    reason: TurnEndReason | None = None
    answer = ""
    for event in reversed(session.events):
        if type(event) is TurnEndEvent and reason is None:
            reason = event.data.reason
        elif type(event) is AssistantMessageEvent and not answer:
            answer = text_of(event.data.content)
        elif type(event) is TurnStartEvent:
            break
    if cancelled:
        return "cancelled", answer, reason
    if isinstance(reason, CompletedReason):
        return "completed", answer, reason
    return "failed", answer, reason


class Run:
    """A child's handle (the :class:`~dsh.core.subagent.SubagentRun` of this plugin)."""

    def __init__(
        self,
        task_id: str,
        parent: Agent,
        request: SubagentRequest,
        child: Agent,
        owner: Fiber,
        tool_filter: ToolFilter,
    ) -> None:
        self._task_id = task_id
        self._parent = parent
        self._request = request
        self._child = child
        self.owner = owner
        """The fiber the child was created through."""
        self.tool_filter = tool_filter
        """What the child may call."""
        self._cancel_reason: str | None = None
        self._result: SubagentResult | None = None
        self._done: asyncio.Future[SubagentResult] = asyncio.get_running_loop().create_future()

    @property
    def task_id(self) -> str:
        return self._task_id

    @property
    def parent(self) -> Agent:
        return self._parent

    @property
    def child(self) -> Agent:
        return self._child

    @property
    def request(self) -> SubagentRequest:
        return self._request

    @property
    def status(self) -> SubagentStatus:
        return "running" if self._result is None else self._result.status

    @property
    def result(self) -> SubagentResult | None:
        return self._result

    def cancel(self, reason: str | None = None) -> None:
        """Cancel the child's queued and running work; a no-op once settled or already cancelled."""
        if self._result is not None or self._cancel_reason is not None:
            return
        self._cancel_reason = reason or "cancelled"
        self._child.cancel(self._cancel_reason)

    async def wait(self) -> SubagentResult:
        """The result once settled; cancelling the waiter leaves the run alone."""
        return await asyncio.shield(self._done)

    async def drive(self, settled: Callable[[Run], None]) -> None:
        """Send the prompt, wait for the child to go idle, dispose it, settle; ``settled`` runs last."""
        try:
            if self._cancel_reason is None:
                self._child.send((text(self._request.prompt),), source=AgentSource(agent_id=self._parent.id))
                await self._child.when_idle()
        finally:
            task = asyncio.current_task()
            gone = self._child.status == "disposed" or (task is not None and task.cancelling() > 0)
            if gone and self._cancel_reason is None:
                self._cancel_reason = "disposed"  # the child's or the driver's owner went away
            await self.owner.dispose()
            self._settle()
            settled(self)

    def _settle(self) -> None:
        session = self._child.session
        status, answer, reason = outcome_of(session, self._cancel_reason is not None)
        usage = summarize_usage(session.events).tokens
        result = SubagentResult(
            task_id=self._task_id,
            child_session=session.id,
            status=status,
            output=answer,
            usage=usage,
            reason=UNSET if reason is None else reason,
        )
        self._result = result
        self._done.set_result(result)
