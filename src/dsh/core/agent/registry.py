"""The registry of live agents and the factory seam the concrete loop fills (SPEC §7.3)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Generator

from dsh.core.agent.events import AGENT_CREATED, AGENT_DISPOSED
from dsh.core.agent.types import Agent, AgentFactory, AgentId, CreateAgentOptions, ResumeAgentOptions
from dsh.core.errors import HarnessError
from dsh.kernel import Context, Effect, Service, ServiceKey, unwrap

NO_FACTORY_MESSAGE = "no agent factory registered (load an agent-loop plugin)"


class AgentRegistry(Service):
    """Class plugin providing ``agents``: who is alive, and how to make more.

    Registrations are effects of the *caller's* fiber (reach the registry through your
    own context, ``ctx[AGENTS]``): disposing the caller unregisters its agents and
    clears the factory it set. :meth:`create` and :meth:`resume` run the factory with
    the same caller, so the session, registration and loop the factory sets up are
    owned by the fiber that asked, transitively.

    Errors are :class:`~dsh.core.errors.HarnessError` with codes ``AGENT_EXISTS``,
    ``FACTORY_EXISTS`` and ``NO_AGENT_FACTORY``.
    """

    def __init__(self, ctx: Context, config: object = None) -> None:
        super().__init__(ctx, AGENTS)
        self._agents: dict[AgentId, Agent] = {}
        self._factory: AgentFactory | None = None

    def register(self, agent: Agent) -> Effect:
        """Add ``agent`` under ``agent.id``, then emit ``agent/created``.

        Raises when the id is taken. If an ``agent/created`` listener raises, the
        entry is removed again (``agent/disposed`` is emitted), the error propagates,
        and the id stays free. The returned effect removes the agent and emits
        ``agent/disposed``; it does not stop the agent (its owner does that).
        """
        ctx = self.ctx
        agents = self._agents

        def body() -> Generator[Callable[[], None], None, None]:
            agent_id = agent.id
            if agent_id in agents:
                raise HarnessError(f'agent "{agent_id}" is already registered', "AGENT_EXISTS")
            agents[agent_id] = agent

            def unregister() -> None:
                del agents[agent_id]
                ctx.emit(AGENT_DISPOSED, agent)

            yield unregister
            ctx.emit(AGENT_CREATED, agent)

        return ctx.effect(body, f"agent {agent.id}")

    def get(self, agent_id: AgentId) -> Agent | None:
        """The live agent registered under ``agent_id``, or None."""
        return self._agents.get(agent_id)

    def set_factory(self, factory: AgentFactory) -> Effect:
        """Install the one agent factory; the returned effect (or the caller's disposal) clears it.

        Raises when a factory is already installed. A service handle is unwrapped, so
        the factory always runs on behalf of the registry's caller, never the fiber
        that installed it.
        """
        target = unwrap(factory)

        def body() -> Callable[[], None]:
            if self._factory is not None:
                raise HarnessError("an agent factory is already registered", "FACTORY_EXISTS")
            self._factory = target

            def clear() -> None:
                self._factory = None

            return clear

        return self.ctx.effect(body, "agent factory")

    def create(self, options: CreateAgentOptions) -> Agent:
        """Ask the factory for a new agent; ``options`` is passed through verbatim.

        Raises ``no agent factory registered (load an agent-loop plugin)`` without a
        factory, and whatever the factory raises.
        """
        factory = self._factory
        if factory is None:
            raise HarnessError(NO_FACTORY_MESSAGE, "NO_AGENT_FACTORY")
        return factory.create_agent(options)

    async def resume(self, options: ResumeAgentOptions) -> Agent:
        """Ask the factory to resume a persisted session; ``options`` is passed through verbatim.

        Raises (when awaited) the same missing-factory error as :meth:`create`, and
        whatever the factory raises.
        """
        factory = self._factory
        if factory is None:
            raise HarnessError(NO_FACTORY_MESSAGE, "NO_AGENT_FACTORY")
        return await factory.resume(options)

    def list(self) -> builtins.list[Agent]:
        """Every live agent, in registration order (a new list each call)."""
        return builtins.list(self._agents.values())


AGENTS: ServiceKey[AgentRegistry] = ServiceKey("agents")
"""The agent registry's service key (``inject: ["agents"]``)."""
