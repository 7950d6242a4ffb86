"""Test doubles for code that talks to agents: a recording agent and a recording factory.

``FakeAgent`` satisfies the :class:`dsh.core.agent.Agent` protocol without running a
loop; ``FakeFactory`` is a service (key ``fake_agent_factory``) whose ``create_agent``
and ``resume`` build a ``FakeAgent`` and register it through the *current caller's*
context, the way a real loop does, so tests can see who owns the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh.core.agent import (
    AGENTS,
    Agent,
    AgentOptions,
    AgentStatus,
    CreateAgentOptions,
    ResumeAgentOptions,
)
from dsh.core.llm import ContentBlock, MessageSource
from dsh.core.session import Session
from dsh.kernel import Context, Service, ServiceKey


class FakeAgent:
    """An agent that records every call and never runs a model."""

    def __init__(self, agent_id: str, session: Session | None = None, options: AgentOptions | None = None) -> None:
        self._id = agent_id
        self._session = session if session is not None else Session(f"{agent_id}-session")
        self._options = options if options is not None else AgentOptions()
        self._status: AgentStatus = "idle"
        self.calls: list[tuple[str, Any, Any]] = []

    @property
    def id(self) -> str:
        return self._id

    @property
    def options(self) -> AgentOptions:
        return self._options

    @property
    def session(self) -> Session:
        return self._session

    @property
    def status(self) -> AgentStatus:
        return self._status

    def send(self, content: Sequence[ContentBlock], *, source: MessageSource | None = None) -> None:
        self.calls.append(("send", content, source))

    def steer(self, content: Sequence[ContentBlock], *, source: MessageSource | None = None) -> None:
        self.calls.append(("steer", content, source))

    def inject(self, content: Sequence[ContentBlock], *, source: MessageSource | None = None) -> None:
        self.calls.append(("inject", content, source))

    def abort(self, reason: str | None = None) -> None:
        self.calls.append(("abort", reason, None))

    def cancel(self, reason: str | None = None) -> None:
        self.calls.append(("cancel", reason, None))

    async def when_idle(self) -> None:
        self.calls.append(("when_idle", None, None))


FAKE_FACTORY: ServiceKey[FakeFactory] = ServiceKey("fake_agent_factory")


class FakeFactory(Service):
    """A factory service recording the options it received; it registers what it builds."""

    def __init__(self, ctx: Context, config: object = None) -> None:
        super().__init__(ctx, FAKE_FACTORY)
        self.created: list[CreateAgentOptions] = []
        self.resumed: list[ResumeAgentOptions] = []

    def _start(self, agent_id: str, options: AgentOptions | None) -> Agent:
        agent = FakeAgent(agent_id, options=options)
        agents = self.ctx.get(AGENTS)
        assert agents is not None, "FakeFactory needs the agents service"
        agents.register(agent)
        return agent

    def create_agent(self, options: CreateAgentOptions) -> Agent:
        self.created.append(options)
        return self._start(options.agent_id, options.agent_options)

    async def resume(self, options: ResumeAgentOptions) -> Agent:
        self.resumed.append(options)
        return self._start(options.agent_id, options.agent_options)
