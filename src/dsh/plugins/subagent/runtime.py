"""``SubagentRuntime``: the ``subagents`` service of the ``subagent`` plugin.

Spawning (see :meth:`SubagentRuntime.spawn`): check the request and the depth, run
the ``subagent/spawn`` waterfall, create the child through a fresh child fiber of the
caller, log ``subagent/start`` in the parent's log, and start the run's driver as a
task of the caller. When the run settles, ``subagent/end`` (outcome and usage) goes
to the parent's log: inside its open turn, else in a one-shot ``injection`` turn.
A background run that finished on its own also leaves the parent a notice: steered
into the running turn (so it lands between steps), else a ``context/message`` of
that one-shot turn. Nothing is written to a disposed parent with no open turn.

Cascade: a parent whose turn ends ``aborted`` or ``disposed``, or who is disposed,
has every running child cancelled; a cancelled child aborts its step (its tools and
processes with it) and is disposed by its driver. Settled runs stay reachable (for
``subagent_output``) until their parent is disposed.

Idle cost: the listeners that filter children's tools and report their progress
(``agent/request``, ``tools/execute``, ``session/event``) are registered while at
least one child runs, and removed with the last one.
"""

from __future__ import annotations

import builtins
import itertools
import uuid
from collections.abc import Awaitable, Callable
from typing import cast

from msgspec import UNSET

from dsh.core.agent import (
    AGENT_DISPOSED,
    AGENT_REQUEST,
    AGENT_TURN_END,
    AGENTS,
    Agent,
    AgentOptions,
    AgentRegistry,
    CreateAgentOptions,
)
from dsh.core.errors import HarnessError, error_message
from dsh.core.llm import GenerateOptions, PluginSource, text, text_of
from dsh.core.session import (
    SESSION_EVENT,
    SESSION_FLUSH,
    AbortedReason,
    AssistantMessageEvent,
    CompletedReason,
    ContextMessageEvent,
    DisposedReason,
    InjectionTrigger,
    MessageData,
    Session,
    SessionEvent,
    SessionEventBase,
    SessionMeta,
    ToolCallEvent,
    ToolErrorInfo,
    TurnEndData,
    TurnEndEvent,
    TurnEndReason,
    TurnStartData,
    TurnStartEvent,
    is_turn_open,
    last_turn_number,
)
from dsh.core.subagent import (
    DELEGATION_TOOLS,
    SUBAGENT_PROGRESS,
    SUBAGENT_SPAWN,
    SubagentEndData,
    SubagentEndEvent,
    SubagentProgress,
    SubagentRequest,
    SubagentRun,
    Subagents,
    SubagentSpawn,
    SubagentStartData,
    SubagentStartEvent,
)
from dsh.core.tools import TOOLS, TOOLS_EXECUTE, ToolExecution, ToolExecutionResult, parse_arguments
from dsh.kernel import Context, Effect, FiberState, PluginSpec, ServiceHandle, unwrap
from dsh.plugins.subagent.policy import UNRESTRICTED, ToolFilter
from dsh.plugins.subagent.run import Run

PLUGIN_NAME = "subagent"
_SOURCE = PluginSource(plugin=PLUGIN_NAME)
_FORBIDDEN = ToolErrorInfo(name="HarnessError", code="FORBIDDEN")


def _hold(ctx: Context, config: object) -> None:
    """``apply`` of a ``subagent-child`` fiber: it only owns the child created through it."""


async def _unchanged(spawn: SubagentSpawn) -> SubagentSpawn:
    return spawn


def _invalid(message: str) -> HarnessError:
    return HarnessError(message, "INVALID_ARGS")


def _joined(*parts: str | None) -> str | None:
    return "\n\n".join(part for part in parts if part) or None


class SubagentRuntime(Subagents):
    """The sub-agent service; see the module docstring. ``max_depth`` bounds the delegation depth."""

    def __init__(self, ctx: Context, max_depth: int) -> None:
        super().__init__(ctx)
        self.max_depth = max_depth
        self._counter = itertools.count(1)
        self._runs: dict[str, Run] = {}
        self._live: dict[str, Run] = {}
        self._by_child: dict[str, Run] = {}
        self._filters: dict[Agent, ToolFilter] = {}
        self._watchers: list[Effect] = []
        ctx.on(AGENT_TURN_END, self._on_turn_end)
        ctx.on(AGENT_DISPOSED, self._parent_disposed)
        ctx.effect(lambda: self._cancel_all, "cancel the running sub-agents")

    # --------------------------------------------------------------- the API
    def get(self, task_id: str) -> SubagentRun | None:
        return self._runs.get(task_id)

    def runs(self, parent: Agent | None = None) -> builtins.list[SubagentRun]:
        return [run for run in self._runs.values() if parent is None or run.parent is parent]

    def admits(self, agent: Agent, tool: str) -> bool:
        return self._filters.get(agent, UNRESTRICTED).admits(tool)

    async def spawn(self, parent: Agent, request: SubagentRequest) -> SubagentRun:
        ctx = self.ctx
        if parent.status == "disposed":
            raise HarnessError(f'agent "{parent.id}" is disposed', "DISPOSED")
        if not request.prompt.strip():
            raise _invalid("invalid prompt: expected a non-empty string")
        header = parent.session.header
        depth = (header.delegation_depth or 0) + 1
        if depth > self.max_depth:
            raise HarnessError(
                f"sub-agents may nest {self.max_depth} deep (the subagent plugin's maxDepth); "
                f"a child of this agent would be at depth {depth}: do the work yourself",
                "DEPTH_LIMIT",
            )
        parent_filter = self._filters.get(parent, UNRESTRICTED)
        self._check_tools(parent_filter, request.tools)
        deny = frozenset(DELEGATION_TOOLS) if depth >= self.max_depth else frozenset()
        tool_filter = parent_filter.narrowed(None if request.tools is None else frozenset(request.tools), deny)
        options = AgentOptions(
            model=request.model or parent.options.model,
            system_prompt=_joined(parent.options.system_prompt, request.system_prompt),
            max_steps=parent.options.max_steps,
            extra=dict(parent.options.extra),
        )
        listed = None if tool_filter.allow is None else tuple(sorted(tool_filter.allow - tool_filter.deny))
        spawn = SubagentSpawn(parent=parent, request=request, depth=depth, tools=listed, options=options)
        spawn = await ctx.waterfall(SUBAGENT_SPAWN, spawn, inner=lambda: _unchanged(spawn))
        if spawn.tools is not None:
            widened = sorted(name for name in spawn.tools if not tool_filter.admits(name))
            if widened:
                raise HarnessError(
                    f"a subagent/spawn listener widened the child's tools ({', '.join(widened)}): it may only narrow",
                    "FORBIDDEN",
                )
            tool_filter = tool_filter.narrowed(frozenset(spawn.tools), frozenset())
        return await self._start(ctx, spawn, tool_filter)

    def _check_tools(self, parent_filter: ToolFilter, tools: tuple[str, ...] | None) -> None:
        if tools is None:
            return
        registry = self.own_ctx[TOOLS]
        for name in tools:
            if registry.get(name) is None:
                raise _invalid(f'invalid tools: no tool is named "{name}"')
            if not parent_filter.admits(name):
                raise HarnessError(f'invalid tools: "{name}" is not available to the parent agent', "FORBIDDEN")

    async def _start(self, ctx: Context, spawn: SubagentSpawn, tool_filter: ToolFilter) -> Run:
        parent, request = spawn.parent, spawn.request
        task_id = f"subagent-{next(self._counter)}"
        agents = unwrap(self.own_ctx[AGENTS])
        owner = await ctx.plugin(PluginSpec(name="subagent-child", apply=_hold))
        header = parent.session.header
        try:
            child = cast(AgentRegistry, ServiceHandle(agents, owner.ctx)).create(
                CreateAgentOptions(
                    agent_id=f"{parent.id}/{task_id}",
                    session_id=str(uuid.uuid4()),
                    meta=SessionMeta(
                        cwd=header.cwd,
                        parent_session=parent.session.id,
                        parent_call_id=request.call_id or UNSET,
                        origin="subagent",
                        delegation_depth=spawn.depth,
                    ),
                    agent_options=spawn.options,
                )
            )
            run = Run(task_id, parent, request, child, owner, tool_filter)
            self._log(
                parent,
                SubagentStartEvent,
                SubagentStartData(
                    task_id=task_id,
                    child_session=child.session.id,
                    child_agent=child.id,
                    description=request.description,
                    background=request.background,
                    depth=spawn.depth,
                    call_id=request.call_id or UNSET,
                    model=spawn.options.model or UNSET,
                    tools=UNSET if spawn.tools is None else spawn.tools,
                ),
            )
        except BaseException:
            await owner.dispose()
            raise
        self._add(run)
        ctx.spawn(run.drive(self._settled), name=f"subagent {task_id}")
        return run

    # ------------------------------------------------------------ bookkeeping
    def _add(self, run: Run) -> None:
        if not self._live:
            own = self.own_ctx
            self._watchers = [
                own.on(AGENT_REQUEST, self._filter_request),
                own.on(TOOLS_EXECUTE, self._filter_call),
                own.on(SESSION_EVENT, self._progress),
            ]
        self._runs[run.task_id] = run
        self._live[run.task_id] = run
        self._by_child[run.child.session.id] = run
        self._filters[run.child] = run.tool_filter

    def _settled(self, run: Run) -> None:
        del self._live[run.task_id]
        del self._by_child[run.child.session.id]
        del self._filters[run.child]
        if run.parent.status == "disposed":  # nobody can ask for its outcome any more
            del self._runs[run.task_id]
        if not self._live:
            for watcher in self._watchers:
                watcher()
            self._watchers = []
        result = run.result
        assert result is not None  # a settled run has its result
        data = SubagentEndData(
            task_id=run.task_id,
            child_session=result.child_session,
            status=result.status,
            usage=result.usage,
            call_id=run.request.call_id or UNSET,
            reason=result.reason,
        )
        notice = None
        if run.request.background and result.status != "cancelled":
            notice = (
                f"background sub-agent task {run.task_id} {result.status}. Collect its answer with subagent_output."
            )
        try:
            self._log(run.parent, SubagentEndEvent, data, notice)
        except Exception as error:  # the child's own log keeps its outcome
            self.own_ctx.logger.warn("subagent: could not log the end of %s: %s", run.task_id, error_message(error))

    def _log(self, parent: Agent, kind: type[SessionEventBase], data: object, notice: str | None = None) -> None:
        """Append to the parent's log inside its open turn, else in a one-shot injection turn."""
        session = parent.session
        if is_turn_open(session):
            session.append(kind, data)
            if notice is not None:  # between the turn's steps, never between a tool call and its result
                parent.steer((text(notice),), source=_SOURCE)
            return
        if parent.status == "disposed":
            return
        turn = last_turn_number(session) + 1
        session.append(TurnStartEvent, TurnStartData(turn=turn, trigger=InjectionTrigger(source=_SOURCE)))
        try:
            session.append(kind, data)
            if notice is not None:
                session.append(ContextMessageEvent, MessageData(content=(text(notice),), source=_SOURCE))
        finally:
            session.append(TurnEndEvent, TurnEndData(turn=turn, reason=CompletedReason()))
            if self.own_ctx.fiber.state is FiberState.ACTIVE:  # unloading: the parent's next flush writes it
                self.own_ctx.spawn(self._flush(session))

    async def _flush(self, session: Session) -> None:
        try:
            await self.own_ctx.parallel(SESSION_FLUSH, session)
        except Exception as error:
            self.own_ctx.logger.warn('subagent: flushing session "%s" failed: %s', session.id, error_message(error))

    # --------------------------------------------------------------- cascade
    def _on_turn_end(self, agent: Agent, turn: int, reason: TurnEndReason) -> None:
        if isinstance(reason, AbortedReason | DisposedReason):
            self._cancel_children(agent)

    def _cancel_all(self) -> None:
        for run in builtins.list(self._live.values()):
            run.cancel("the subagent plugin was unloaded")

    def _parent_disposed(self, agent: Agent) -> None:
        """Cancel the agent's running children and forget its settled ones (their ids are its own)."""
        self._cancel_children(agent)
        for task_id, run in builtins.list(self._runs.items()):
            if run.parent is agent and task_id not in self._live:
                del self._runs[task_id]

    def _cancel_children(self, agent: Agent) -> None:
        for run in builtins.list(self._live.values()):
            if run.parent is agent:
                run.cancel("parent cancelled")

    # ---------------------------------------------------- children's tool view
    def _filter_request(
        self,
        agent: Agent,
        turn: int,
        step: int,
        options: GenerateOptions,
        next: Callable[[], Awaitable[GenerateOptions]],
    ) -> Awaitable[GenerateOptions]:
        tool_filter = self._filters.get(agent)
        if tool_filter is not None and options.tools:
            options.tools = [schema for schema in options.tools if tool_filter.admits(schema.name)] or None
        return next()

    def _filter_call(
        self, execution: ToolExecution, next: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> Awaitable[ToolExecutionResult]:
        tool_filter = self._filters.get(cast(Agent, execution.agent))
        if tool_filter is None or tool_filter.admits(execution.name):
            return next()
        return _refused(execution)

    def _progress(self, session: Session, event: SessionEvent) -> None:
        run = self._by_child.get(session.id)
        if run is None:
            return
        if type(event) is ToolCallEvent:
            progress = SubagentProgress(
                task_id=run.task_id,
                child_session=session.id,
                kind="tool",
                title=self._call_title(event.data.name, event.data.arguments),
                call_id=run.request.call_id or UNSET,
            )
        elif type(event) is AssistantMessageEvent and text_of(event.data.content):
            progress = SubagentProgress(
                task_id=run.task_id,
                child_session=session.id,
                kind="message",
                text=text_of(event.data.content),
                call_id=run.request.call_id or UNSET,
            )
        else:
            return
        try:
            self.own_ctx.emit(SUBAGENT_PROGRESS, run.parent, progress)
        except Exception as error:
            self.own_ctx.logger.warn("subagent: a subagent/progress listener failed: %s", error_message(error))

    def _call_title(self, name: str, arguments: str) -> str:
        definition = self.own_ctx[TOOLS].get(name)
        if definition is not None and definition.present_call is not None:
            try:
                presentation = definition.present_call(parse_arguments(arguments))
            except Exception:  # display code: a failing presenter falls back to the name
                presentation = None
            if presentation is not None:
                return presentation.title
        return name


async def _refused(execution: ToolExecution) -> ToolExecutionResult:
    return ToolExecutionResult(
        call_id=execution.call_id,
        content=(text(f'Error: tool "{execution.name}" is not available to this sub-agent'),),
        is_error=True,
        error=_FORBIDDEN,
    )
