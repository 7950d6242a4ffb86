"""AgentRegistry: registration, HMR safety, rollback, and the factory seam (SPEC §7.3-7.4)."""

from __future__ import annotations

import pytest

from dsh.core.agent import (
    AGENT_CREATED,
    AGENT_DISPOSED,
    AGENTS,
    Agent,
    AgentOptions,
    AgentRegistry,
    CreateAgentOptions,
    ResumeAgentOptions,
)
from dsh.core.errors import HarnessError
from dsh.core.llm import UserSource, text
from dsh.core.session import SessionMeta
from dsh.kernel import Context, Fiber, FiberState, KernelError, PluginSpec, unwrap
from tests.core.agent.helpers import FAKE_FACTORY, FakeAgent, FakeFactory


class RecordingFactory:
    """A plain factory object returning a fixed agent and keeping the options it got."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.created: list[CreateAgentOptions] = []
        self.resumed: list[ResumeAgentOptions] = []

    def create_agent(self, options: CreateAgentOptions) -> Agent:
        self.created.append(options)
        return self.agent

    async def resume(self, options: ResumeAgentOptions) -> Agent:
        self.resumed.append(options)
        return self.agent


async def boot() -> tuple[Context, AgentRegistry]:
    root = Context()
    await root.plugin(AgentRegistry)
    return root, root[AGENTS]


async def child(root: Context, name: str = "owner", inject: tuple[str, ...] = ("agents",)) -> Context:
    """A plugin fiber that declares ``inject``; returns its context."""
    holder: list[Context] = []
    await root.plugin(PluginSpec(name=name, apply=lambda ctx, _config: holder.append(ctx), inject=inject))
    assert holder, f"plugin {name} did not start"
    return holder[0]


def record(root: Context) -> dict[str, list[Agent]]:
    seen: dict[str, list[Agent]] = {"created": [], "disposed": []}
    root.on(AGENT_CREATED, seen["created"].append)
    root.on(AGENT_DISPOSED, seen["disposed"].append)
    return seen


# ------------------------------------------------------------------ describe AgentRegistry


async def test_registers_agents_and_emits_created_disposed_events() -> None:
    """registers agents and emits created/disposed events"""
    root, _ = await boot()
    seen = record(root)
    owner = await child(root)
    agents = owner[AGENTS]
    first, second = FakeAgent("a"), FakeAgent("b")

    dispose_first = agents.register(first)
    agents.register(second)

    assert seen["created"] == [first, second]
    assert agents.get("a") is first
    assert agents.get("b") is second
    assert agents.get("missing") is None
    assert agents.list() == [first, second]
    assert seen["disposed"] == []

    dispose_first()
    assert seen["disposed"] == [first]
    assert agents.get("a") is None
    assert agents.list() == [second]

    dispose_first()  # idempotent: no second agent/disposed
    assert seen["disposed"] == [first]


async def test_rejects_duplicate_ids_and_unregisters_on_fiber_dispose_hmr_safety() -> None:
    """rejects duplicate ids and unregisters on fiber dispose (HMR safety)"""
    root, registry = await boot()
    seen = record(root)
    owner = await child(root)
    agent = FakeAgent("main")
    owner[AGENTS].register(agent)

    with pytest.raises(HarnessError, match='agent "main" is already registered') as caught:
        owner[AGENTS].register(FakeAgent("main"))
    assert caught.value.code == "AGENT_EXISTS"
    assert registry.get("main") is agent

    await owner.fiber.dispose()

    assert registry.get("main") is None
    assert registry.list() == []
    assert seen["disposed"] == [agent]
    replacement = FakeAgent("main")
    root[AGENTS].register(replacement)
    assert registry.get("main") is replacement


async def test_rolls_back_the_agent_entry_when_an_agent_created_listener_throws_p1_1() -> None:
    """rolls back the agent entry when an agent/created listener throws (P1-1)"""
    root, registry = await boot()
    owner = await child(root)
    disposed: list[Agent] = []
    root.on(AGENT_DISPOSED, disposed.append)

    def explode(_agent: Agent) -> None:
        raise RuntimeError("created listener boom")

    stop_exploding = root.on(AGENT_CREATED, explode)
    effects_before = owner.fiber.effect_count
    agent = FakeAgent("x")

    with pytest.raises(RuntimeError, match="created listener boom"):
        owner[AGENTS].register(agent)

    assert registry.get("x") is None
    assert registry.list() == []
    assert disposed == [agent]
    assert owner.fiber.effect_count == effects_before

    stop_exploding()
    again = FakeAgent("x")
    owner[AGENTS].register(again)
    assert registry.get("x") is again


async def test_unloading_the_registering_plugin_leaves_nothing_behind() -> None:
    """Unload: disposing the registering fiber leaves no agent, factory or listener."""
    root, registry = await boot()
    listeners_before = root.listener_count(AGENT_CREATED)
    owner = await child(root)
    owner.on(AGENT_CREATED, lambda _agent: None)
    owner[AGENTS].register(FakeAgent("one"))
    owner[AGENTS].register(FakeAgent("two"))
    owner[AGENTS].set_factory(RecordingFactory(FakeAgent("made")))

    await owner.fiber.dispose()

    assert owner.fiber.state is FiberState.DISPOSED
    assert owner.fiber.effect_count == 0
    assert registry.list() == []
    assert root.listener_count(AGENT_CREATED) == listeners_before
    with pytest.raises(HarnessError, match="no agent factory registered"):
        registry.create(CreateAgentOptions(agent_id="a", session_id="s"))


async def test_registering_through_a_disposed_plugin_context_raises() -> None:
    """A registration through a fiber that is gone fails instead of leaking."""
    root, registry = await boot()
    owner = await child(root)
    handle = owner[AGENTS]
    await owner.fiber.dispose()

    with pytest.raises(KernelError, match="cannot create effect on inactive context"):
        handle.register(FakeAgent("late"))
    assert registry.list() == []


async def test_the_registry_service_goes_away_with_its_fiber() -> None:
    """Disposing the registry's own fiber withdraws the agents service."""
    root = Context()
    fiber = await root.plugin(AgentRegistry)
    service = root.get(AGENTS)
    assert isinstance(service, AgentRegistry)

    await fiber.dispose()

    assert root.get(AGENTS) is None


# ------------------------------------------------------------------ describe AgentRegistry factory seam


async def test_create_resume_throw_when_no_factory_is_registered() -> None:
    """create()/resume() throw when no factory is registered"""
    _, registry = await boot()

    with pytest.raises(HarnessError, match="no agent factory") as created:
        registry.create(CreateAgentOptions(agent_id="a", session_id="s"))
    assert str(created.value) == "no agent factory registered (load an agent-loop plugin)"
    assert created.value.code == "NO_AGENT_FACTORY"

    pending = registry.resume(ResumeAgentOptions(agent_id="a", resume_session_id="s"))
    with pytest.raises(HarnessError, match="no agent factory") as resumed:
        await pending
    assert resumed.value.code == "NO_AGENT_FACTORY"


async def test_set_factory_registers_a_factory_create_resume_delegate_to_it() -> None:
    """setFactory registers a factory; create/resume delegate to it"""
    root, registry = await boot()
    owner = await child(root)
    agent = FakeAgent("made")
    factory = RecordingFactory(agent)
    owner[AGENTS].set_factory(factory)
    create_options = CreateAgentOptions(
        agent_id="made",
        session_id="made-session",
        meta=SessionMeta(cwd="/w", parent_session="p"),
        agent_options=AgentOptions(model="m", system_prompt="be brief", extra={"k": 1}),
    )
    resume_options = ResumeAgentOptions(agent_id="made", resume_session_id="old", agent_options=AgentOptions(model="m"))

    assert registry.create(create_options) is agent
    assert await registry.resume(resume_options) is agent

    assert len(factory.created) == 1
    assert factory.created[0] is create_options
    assert len(factory.resumed) == 1
    assert factory.resumed[0] is resume_options


async def test_set_factory_rejects_a_second_factory() -> None:
    """setFactory rejects a second factory"""
    root, registry = await boot()
    owner = await child(root)
    first = RecordingFactory(FakeAgent("first"))
    owner[AGENTS].set_factory(first)
    other = await child(root, "other")
    effects_before = other.fiber.effect_count

    with pytest.raises(HarnessError, match="an agent factory is already registered") as caught:
        other[AGENTS].set_factory(RecordingFactory(FakeAgent("second")))

    assert caught.value.code == "FACTORY_EXISTS"
    assert other.fiber.effect_count == effects_before
    assert registry.create(CreateAgentOptions(agent_id="first", session_id="s")) is first.agent


async def test_disposing_the_set_factory_fiber_clears_the_factory_hmr_safety() -> None:
    """disposing the setFactory fiber clears the factory (HMR safety)"""
    root, registry = await boot()
    owner = await child(root)
    owner[AGENTS].set_factory(RecordingFactory(FakeAgent("a")))

    await owner.fiber.dispose()

    with pytest.raises(HarnessError, match="no agent factory"):
        registry.create(CreateAgentOptions(agent_id="a", session_id="s"))
    replacement = RecordingFactory(FakeAgent("b"))
    root[AGENTS].set_factory(replacement)
    assert registry.create(CreateAgentOptions(agent_id="b", session_id="s")) is replacement.agent


async def test_disposing_the_set_factory_effect_clears_the_factory() -> None:
    """The effect returned by set_factory clears the slot by itself, once."""
    root, registry = await boot()
    clear = root[AGENTS].set_factory(RecordingFactory(FakeAgent("a")))

    clear()
    clear()

    with pytest.raises(HarnessError, match="no agent factory"):
        registry.create(CreateAgentOptions(agent_id="a", session_id="s"))


async def test_factory_errors_reach_the_caller_of_create_and_resume() -> None:
    """Whatever the factory raises propagates unchanged."""
    root, registry = await boot()

    class Refusing:
        def create_agent(self, options: CreateAgentOptions) -> Agent:
            raise HarnessError(f'agent "{options.agent_id}" is already registered', "AGENT_EXISTS")

        async def resume(self, options: ResumeAgentOptions) -> Agent:
            raise HarnessError(f"cannot resume {options.resume_session_id}", "NO_SESSION")

    root[AGENTS].set_factory(Refusing())

    with pytest.raises(HarnessError, match='agent "a" is already registered'):
        registry.create(CreateAgentOptions(agent_id="a", session_id="s"))
    with pytest.raises(HarnessError, match="cannot resume gone"):
        await registry.resume(ResumeAgentOptions(agent_id="a", resume_session_id="gone"))


# ------------------------------------------------------------------ caller attribution


async def boot_with_factory(as_handle: bool) -> tuple[Context, AgentRegistry, Fiber, Context]:
    """Registry + FakeFactory installed by a separate ``loop`` plugin, plus a ``bridge`` caller."""
    root, registry = await boot()
    await root.plugin(FakeFactory)

    def install(ctx: Context, _config: object) -> None:
        service = ctx[FAKE_FACTORY] if as_handle else unwrap(ctx[FAKE_FACTORY])
        ctx[AGENTS].set_factory(service)

    loop = await root.plugin(PluginSpec(name="loop", apply=install, inject=["agents", FAKE_FACTORY.name]))
    caller = await child(root, "bridge")
    return root, registry, loop, caller


@pytest.mark.parametrize("as_handle", [False, True], ids=["service", "handle"])
async def test_an_agent_created_through_the_registry_belongs_to_the_original_caller(as_handle: bool) -> None:
    """create() runs the factory on behalf of the caller: disposing ONLY the caller unregisters the agent."""
    root, registry, loop, caller = await boot_with_factory(as_handle)
    disposed: list[Agent] = []
    root.on(AGENT_DISPOSED, disposed.append)

    agent = caller[AGENTS].create(CreateAgentOptions(agent_id="a1", session_id="s1"))

    assert registry.get("a1") is agent
    await caller.fiber.dispose()
    assert registry.get("a1") is None
    assert disposed == [agent]
    assert loop.state is FiberState.ACTIVE
    factory = root[FAKE_FACTORY]
    assert [options.agent_id for options in factory.created] == ["a1"]


@pytest.mark.parametrize("as_handle", [False, True], ids=["service", "handle"])
async def test_an_agent_resumed_through_the_registry_belongs_to_the_original_caller(as_handle: bool) -> None:
    """resume() keeps the caller attribution across the await."""
    root, registry, loop, caller = await boot_with_factory(as_handle)

    agent = await caller[AGENTS].resume(ResumeAgentOptions(agent_id="r1", resume_session_id="old"))

    assert registry.get("r1") is agent
    await caller.fiber.dispose()
    assert registry.get("r1") is None
    assert loop.state is FiberState.ACTIVE
    assert [options.resume_session_id for options in root[FAKE_FACTORY].resumed] == ["old"]


async def test_agent_options_default_to_unset_with_a_fresh_extra_mapping() -> None:
    """AgentOptions: None means unset, and each instance owns its ``extra`` dict."""
    first, second = AgentOptions(), AgentOptions()
    first.extra["plugin"] = True

    assert (first.model, first.system_prompt) == (None, None)
    assert second.extra == {}


async def test_the_fake_agent_satisfies_the_agent_protocol() -> None:
    """The runtime-checkable protocol accepts a complete agent and rejects other objects."""
    agent = FakeAgent("p")
    agent.send((text("hi"),), source=UserSource())
    await agent.when_idle()

    assert isinstance(agent, Agent)
    assert not isinstance(object(), Agent)
    assert agent.status == "idle"
    assert agent.session.id == "p-session"
    assert [name for name, *_ in agent.calls] == ["send", "when_idle"]
