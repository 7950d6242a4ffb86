"""``AgentLoop``: the service that creates, resumes and owns loop agents (SPEC §8.1-8.2).

It registers itself as the agents factory, so ``agents.create(...)`` and
``agents.resume(...)`` land here. Agents created through a caller's context are
owned by the caller's fiber: disposing the caller stops and unregisters them.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from dsh.agent_loop.agent import ReactLoopAgent
from dsh.agent_loop.state import DEFAULT_MAX_PARALLEL_TOOL_CALLS, LoopSettings
from dsh.core.agent import AGENTS, AgentOptions, CreateAgentOptions, ResumeAgentOptions
from dsh.core.errors import HarnessError
from dsh.core.persistence import SESSION_PERSISTENCE, SessionPersistence
from dsh.core.session import SESSIONS, Session, SessionMeta, SessionStore
from dsh.kernel import Context, Disposer, Service, ServiceKey


class ConfiguredAgent(BaseModel):
    """One agent started with the plugin (YAML keys are camelCase)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    id: str
    model: str | None = None
    system_prompt: str | None = Field(default=None, alias="systemPrompt")
    resume_session_id: str | None = Field(default=None, alias="resumeSessionId")
    max_steps: int | None = Field(default=None, ge=1, alias="maxSteps")


class AgentLoopConfig(BaseModel):
    """The loop's config: agents to start, and the limits every agent runs under.

    ``maxSteps`` caps the steps of each turn (absent: no limit; an agent's own
    ``max_steps`` wins); ``maxParallelToolCalls`` bounds how many concurrency-safe
    tool calls of one step run at once (1 runs every call alone).
    """

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    agents: list[ConfiguredAgent] = Field(default_factory=list)
    max_steps: int | None = Field(default=None, ge=1, alias="maxSteps")
    max_parallel_tool_calls: int = Field(default=DEFAULT_MAX_PARALLEL_TOOL_CALLS, ge=1, alias="maxParallelToolCalls")


class AgentLoop(Service):
    """The agents factory and the one concrete loop (plugin name ``agent-loop``)."""

    name: ClassVar[str] = "agent-loop"
    inject: ClassVar[list[str]] = ["agents", "sessions", "llm", "tools", "system_prompt"]
    Config: ClassVar[type[BaseModel]] = AgentLoopConfig

    def __init__(self, ctx: Context, config: AgentLoopConfig) -> None:
        super().__init__(ctx, AGENT_LOOP)
        self.settings = LoopSettings(max_steps=config.max_steps, max_parallel_tool_calls=config.max_parallel_tool_calls)
        """The limits every agent of this loop runs under."""
        ctx[AGENTS].set_factory(self)
        for entry in config.agents:
            options = AgentOptions(model=entry.model, system_prompt=entry.system_prompt, max_steps=entry.max_steps)
            if entry.resume_session_id:
                self._resume_when_persistent(ctx, entry.id, entry.resume_session_id, options)
            else:
                self.create(entry.id, options)

    def _resume_when_persistent(self, ctx: Context, agent_id: str, session_id: str, options: AgentOptions) -> None:
        async def resume(child: Context) -> None:
            persistence = child.get(SESSION_PERSISTENCE)
            assert persistence is not None  # guaranteed by inject
            try:
                await self.resume_with(
                    persistence,
                    ResumeAgentOptions(agent_id=agent_id, resume_session_id=session_id, agent_options=options),
                )
            except Exception as error:
                ctx.logger.warn('agent "%s": config-driven resume of "%s" failed: %s', agent_id, session_id, error)

        ctx.inject([SESSION_PERSISTENCE], resume)

    # ------------------------------------------------------------------ factory
    def _assert_free(self, agent_id: str) -> None:
        agents = self.ctx.get(AGENTS)
        if agents is not None and agents.get(agent_id) is not None:
            raise HarnessError(f'agent "{agent_id}" is already registered', "DUPLICATE_AGENT")

    def _sessions(self) -> SessionStore:
        sessions = self.ctx.get(SESSIONS)
        if sessions is None:
            raise HarnessError("the sessions service is not loaded", "NO_SERVICE")
        return sessions

    def create(self, agent_id: str, options: AgentOptions | None = None) -> ReactLoopAgent:
        """Create an agent on a fresh ``<id>-session-<uuid>`` session (no cwd)."""
        self._assert_free(agent_id)
        session = self._sessions().create(f"{agent_id}-session-{uuid.uuid4()}", meta=SessionMeta())
        return self.start(agent_id, options or AgentOptions(), session)

    def create_agent(self, options: CreateAgentOptions) -> ReactLoopAgent:
        """The factory's create: the caller names the session id and its meta."""
        self._assert_free(options.agent_id)
        session = self._sessions().create(options.session_id, meta=options.meta or SessionMeta())
        return self.start(options.agent_id, options.agent_options or AgentOptions(), session)

    async def resume(self, options: ResumeAgentOptions) -> ReactLoopAgent:
        """The factory's resume: continue a persisted session under its own id."""
        persistence = self.ctx.get(SESSION_PERSISTENCE)
        if persistence is None:
            raise HarnessError(
                "cannot resume: session persistence is not configured (load a dsh-session-persistence backend)",
                "NO_PERSISTENCE",
            )
        return await self.resume_with(persistence, options)

    async def resume_with(self, persistence: SessionPersistence, options: ResumeAgentOptions) -> ReactLoopAgent:
        """Load the persisted session and start an agent on it, as :meth:`resume` does.

        The loaded events are immutable: the live session shares them, nothing is copied.
        """
        self._assert_free(options.agent_id)
        loaded = await persistence.load(options.resume_session_id)
        self._assert_free(options.agent_id)
        header = loaded.meta
        meta = SessionMeta(
            created_at=header.created_at,
            cwd=header.cwd,
            parent_session=header.parent_session,
            seed_length=header.seed_length,
            parent_call_id=header.parent_call_id,
            origin=header.origin,
            delegation_depth=header.delegation_depth,
        )
        session = self._sessions().create(options.resume_session_id, seed=loaded.events, meta=meta)
        return self.start(options.agent_id, options.agent_options or AgentOptions(), session)

    def start(self, agent_id: str, options: AgentOptions, session: Session) -> ReactLoopAgent:
        """Construct the agent, register it and launch its driver, as one effect of the caller."""
        ctx = self.ctx
        agent = ReactLoopAgent(ctx, agent_id, options, session, self.settings)
        agents = ctx.get(AGENTS)
        if agents is None:
            raise HarnessError("the agents service is not loaded", "NO_SERVICE")

        def body() -> Generator[Disposer, None, None]:
            yield agents.register(agent)
            yield agent.start()

        ctx.effect(body, f"agent {agent_id}")
        return agent


AGENT_LOOP: ServiceKey[AgentLoop] = ServiceKey("agent_loop")
