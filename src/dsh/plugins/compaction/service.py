"""The ``compaction`` service: keeps each agent's history under its model's context window.

Before every model request (``agent/request``, after the other listeners) the request
is measured (:mod:`.meter`). At ``threshold`` of the model's window or more it is
compacted, at most once per request:

1. old tool results over ``pruneChars`` characters outside the recent tail are
   pruned to their head and tail (no model call); if that brings the request under
   the threshold, that is all;
2. otherwise ONE summary request: the conversation's own system prompt, tools and
   the messages before the cut (a prefix of what the provider has cached), then a user
   instruction to summarize. The summary stands for everything before a balanced cut
   that keeps a recent tail of at least ``retain`` of the window verbatim.

Each attempt logs one ``compaction`` event (:class:`~dsh.core.session.CompactionData`)
and emits ``agent/compaction``; the loop's request then carries the history derived
from the log, exactly what a resumed, forked or replayed session derives. A summary
that does not shrink the request is rejected (a ``compaction`` with ``error``, the
history unchanged). After ``maxFailures`` failed attempts in a row (a compaction that
leaves the request over the threshold counts as one) automatic compaction stops for
the session and says so (``stopped``): no compaction loop.

A request the provider refuses as too long (code ``CONTEXT_WINDOW_EXCEEDED``) is
compacted once, with the deepest balanced cut, and sent again with the compacted
history (through ``agent/request-error``; the request object is the one the loop
resends). Failures of the summary request are the attempt's failure, never the
step's; the step's abort cancels the summary request and ends the turn ``aborted``.

:meth:`Compaction.compact` compacts an idle agent's history on demand (a manual
compaction, between turns); :meth:`Compaction.compact_command` is the ``/compact``
command handler. Failure counts live in memory, per session.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import ClassVar

import msgspec
from msgspec import UNSET, UnsetType

from dsh.core.agent import AGENT_REQUEST, AGENT_REQUEST_ERROR, Agent, RequestFailure
from dsh.core.commands import COMMANDS, Command
from dsh.core.errors import CONTEXT_WINDOW_EXCEEDED, HarnessError, LlmError, error_message
from dsh.core.llm import LLM, ErrorFinish, GenerateOptions, Message, TextBlock, TokenUsage, ToolSchema, text_of
from dsh.core.redact import redact_secrets
from dsh.core.session import CompactionData, CompactionEvent, PrunedResult, Session, derive_messages
from dsh.core.system_prompt import SYSTEM_PROMPT, render_prompt
from dsh.kernel import Context, Service, ServiceKey
from dsh.plugins.compaction.config import Config as CompactionConfig
from dsh.plugins.compaction.history import choose_cut, estimate_request, log_view, prunable, tail_start
from dsh.plugins.compaction.meter import Meter
from dsh.plugins.compaction.notices import AGENT_COMPACTION, CompactionNotice, CompactionResult

COMPACTION: ServiceKey[Compaction] = ServiceKey("compaction")
"""The key of the ``compaction`` service."""

SUMMARY_INSTRUCTION = (
    "Summarize the conversation so far. Your summary replaces the earlier messages, while the most recent "
    "ones stay as they are, so write what you need to carry on the work: the user's goals and constraints, "
    "decisions made, the files, commands and results that matter, what is done, what failed, and the next "
    "steps. Answer with the summary only, in plain text; do not call tools."
)
"""The user message that ends a summary request."""

SUMMARY_HEADER = "[This conversation was compacted. Summary of the earlier part:]\n\n"
"""What the logged summary starts with (the model sees it as a user message)."""


class _FailedError(Exception):
    """An attempt that changes nothing; the message says why."""


class _NothingError(_FailedError):
    """Nothing can be compacted (a manual attempt then logs nothing)."""


class _State:
    """One session's compaction state: the meter, the failure count, the lock."""

    __slots__ = ("busy", "failures", "meter", "overflow", "stopped", "system", "tools")

    def __init__(self) -> None:
        self.meter = Meter()
        self.failures = 0
        self.stopped = False
        self.busy = False
        self.overflow: tuple[int, int] | None = None  # the step whose overflow was recovered
        self.system: str | None = None  # the last request's, for a manual compaction's prefix
        self.tools: list[ToolSchema] | None = None


class Compaction(Service):
    """The ``compaction`` service (see the module docstring); needs ``llm``."""

    name = "compaction"
    Config = CompactionConfig
    inject: ClassVar[list[str]] = [LLM.name]

    def __init__(self, ctx: Context, config: CompactionConfig) -> None:
        super().__init__(ctx, COMPACTION)
        self.config = config
        self._states: weakref.WeakKeyDictionary[Session, _State] = weakref.WeakKeyDictionary()
        self._windows: dict[str, int] = {}  # config.window() by model, resolved once
        if config.auto:
            ctx.on(AGENT_REQUEST, self._on_request)
            ctx.on(AGENT_REQUEST_ERROR, self._on_request_error)
        commands = ctx.get(COMMANDS)  # a commands service loaded before this plugin lists /compact
        if commands is not None:
            commands.register(
                Command(
                    name="compact",
                    description="summarize the older history now, so later turns send less",
                    hint="[what the summary must keep]",
                    handler=self.compact_command,
                )
            )

    # ------------------------------------------------------------------ public
    async def compact(self, agent: Agent, instructions: str | None = None) -> CompactionResult:
        """Compact ``agent``'s history now, with one summary request (``instructions`` added to it).

        The agent must be idle (``BUSY`` otherwise, and while another compaction of
        its session runs); the compaction is logged between turns. Returns what
        happened; a failed attempt is logged and returned (``compacted`` False), not
        raised. Raises ``NO_MODEL`` when the agent has no model.
        """
        session = agent.session
        state = self._state(session)
        if agent.status == "running" or state.busy:
            raise HarnessError(f'agent "{agent.id}" is busy: compact it once its turn has ended', "BUSY")
        model = agent.options.model
        if not model:
            raise HarnessError(f'agent "{agent.id}" has no model to summarize with: set AgentOptions.model', "NO_MODEL")
        system, tools = state.system, state.tools
        if system is None and tools is None:
            system, tools = await self._prompt(agent)
        request = GenerateOptions(model=model, messages=session.derive_messages(), system=system, tools=tools)
        tokens = estimate_request(system, tools, request.messages)
        state.meter.reset()
        return await self._attempt(agent, state, UNSET, UNSET, request, tokens, "manual", instructions)

    async def compact_command(self, agent: Agent, args: str) -> str | None:
        """The ``/compact [instructions]`` command: compact ``agent`` now; the line to show."""
        try:
            result = await self.compact(agent, args.strip() or None)
        except HarnessError as error:
            return f"compaction failed: {error}"
        return result.message

    # --------------------------------------------------------------- listeners
    async def _on_request(
        self,
        agent: Agent,
        turn: int,
        step: int,
        options: GenerateOptions,
        proceed: Callable[[], Awaitable[GenerateOptions]],
    ) -> GenerateOptions:
        request = await proceed()
        session = agent.session
        state = self._state(session)
        state.system, state.tools = request.system, request.tools
        tokens: int | None = None
        if request.model and not state.stopped and not state.busy:
            tokens = state.meter.measure(session, request)
            window = self._windows.get(request.model)
            if window is None:
                window = self._windows[request.model] = self.config.window(request.model)
            if tokens >= self.config.threshold * window:
                estimated = estimate_request(request.system, request.tools, request.messages)  # like the result's
                result = await self._attempt(agent, state, turn, step, request, estimated, "pressure")
                if result.compacted:
                    request.messages = session.derive_messages()
                    tokens = None
        state.meter.sent(session, request, tokens)
        return request

    async def _on_request_error(
        self,
        agent: Agent,
        turn: int,
        step: int,
        failure: RequestFailure,
        proceed: Callable[[], Awaitable[bool]],
    ) -> bool:
        session = agent.session
        state = self._state(session)
        request = failure.request
        if (
            failure.error.code != CONTEXT_WINDOW_EXCEEDED
            or state.stopped
            or state.busy
            or state.overflow == (turn, step)
        ):
            return await proceed()
        state.overflow = (turn, step)
        tokens = estimate_request(request.system, request.tools, request.messages)
        result = await self._attempt(agent, state, turn, step, request, tokens, "context-overflow")
        if not result.compacted:
            return await proceed()
        request.messages = session.derive_messages()
        state.meter.sent(session, request, None)
        return True

    # ---------------------------------------------------------------- attempts
    def _state(self, session: Session) -> _State:
        state = self._states.get(session)
        if state is None:
            state = self._states[session] = _State()
        return state

    async def _prompt(self, agent: Agent) -> tuple[str | None, list[ToolSchema] | None]:
        """The system prompt and tools the loop would send (before ``agent/request`` listeners)."""
        prompts = self.own_ctx.get(SYSTEM_PROMPT)
        parts = [agent.options.system_prompt or ""]
        tools: list[ToolSchema] | None = None
        if prompts is not None:
            assembly = await prompts.assemble()
            parts.insert(0, render_prompt(assembly))
            tools = list(assembly.tools) or None
        system = "\n\n".join(part for part in parts if part)
        return system or None, tools

    async def _attempt(
        self,
        agent: Agent,
        state: _State,
        turn: int | UnsetType,
        step: int | UnsetType,
        request: GenerateOptions,
        tokens: int,
        trigger: str,
        instructions: str | None = None,
    ) -> CompactionResult:
        """One compaction attempt, logged and announced; ``tokens`` is the chars/4 estimate of ``request``."""
        state.busy = True
        try:
            data = await self._plan(agent.session, turn, step, request, tokens, trigger, instructions)
        except _FailedError as failed:
            if trigger == "manual" and isinstance(failed, _NothingError):
                return CompactionResult(compacted=False, message=str(failed), tokens_before=tokens, tokens_after=tokens)
            data = CompactionData(
                trigger=trigger, turn=turn, step=step, tokens_before=tokens, error=redact_secrets(str(failed))
            )
        finally:
            state.busy = False
        event = agent.session.append(CompactionEvent, data)
        return self._report(agent, state, event, tokens)

    async def _plan(
        self,
        session: Session,
        turn: int | UnsetType,
        step: int | UnsetType,
        request: GenerateOptions,
        tokens: int,
        trigger: str,
        instructions: str | None,
    ) -> CompactionData:
        """The ``compaction`` to log (raises :class:`_FailedError` for an attempt that changes nothing)."""
        config = self.config
        events = session.events
        window = config.window(request.model)
        view = log_view(events)
        retain = int(window * config.retain)
        pruned: tuple[PrunedResult, ...] = ()
        fallback: CompactionData | None = None  # the pruning alone, if the summary cannot be had
        if trigger != "manual":
            protected = tail_start(events, view.kept_from, retain)
            pruned = tuple(prunable(events, view, protected, config.prune_chars, config.keep_chars))
            if pruned:
                only = CompactionData(trigger=trigger, turn=turn, step=step, pruned=pruned, tokens_before=tokens)
                after = self._size_with(session, only, request)
                fallback = _with_after(only, after)
                if trigger == "pressure" and after < config.threshold * window:
                    return fallback
        cut = choose_cut(events, view.kept_from, None if trigger == "context-overflow" else retain)
        try:
            if cut is None:
                raise _NothingError("nothing to compact: the history is a single exchange")
            probe = CompactionData(trigger=trigger, summary="", kept_from=cut)
            kept = len(self._derived_with(session, probe)) - 1
            prefix = request.messages[: max(0, len(request.messages) - kept)]
            text, usage = await self._summarize(request, prefix, instructions)
            data = CompactionData(
                trigger=trigger,
                turn=turn,
                step=step,
                summary=SUMMARY_HEADER + text,
                kept_from=cut,
                pruned=tuple([entry for entry in pruned if entry.original_seq >= cut]),
                tokens_before=tokens,
                model=request.model,
                usage=UNSET if usage is None else usage,
            )
            after = self._size_with(session, data, request)
            if after >= tokens:
                raise _FailedError(
                    f"the summary did not shrink the history (~{tokens} -> ~{after} tokens); it was not used"
                )
        except _FailedError:
            if fallback is not None:
                return fallback
            raise
        return _with_after(data, after)

    async def _summarize(
        self, request: GenerateOptions, prefix: list[Message], instructions: str | None
    ) -> tuple[str, TokenUsage | None]:
        """The text of one summary request over ``prefix`` (raises :class:`_FailedError` when there is none)."""
        instruction = SUMMARY_INSTRUCTION if not instructions else f"{SUMMARY_INSTRUCTION}\n\nAlso: {instructions}"
        options = GenerateOptions(
            model=request.model,
            messages=[*prefix, Message(role="user", content=(TextBlock(text=instruction),))],
            system=request.system,
            tools=request.tools,
            max_tokens=self.config.summary_max_tokens,
            signal=request.signal,
        )
        signal = request.signal
        try:
            result = await self.own_ctx[LLM].generate(options)  # on the plugin's behalf, whoever asked
        except LlmError as error:
            if signal is not None and signal.aborted:
                raise
            raise _FailedError(f"the summary request failed: {error_message(error)}") from error
        finish = result.finish
        if type(finish) is ErrorFinish:
            raise _FailedError(f"the summary request failed: {finish.message}")
        text = text_of(result.message.content).strip()
        if not text:
            raise _FailedError("the summary request answered no text")
        return text, result.usage

    def _derived_with(self, session: Session, data: CompactionData) -> list[Message]:
        events = list(session.events)
        events.append(CompactionEvent(seq=len(events), time=0, data=data))
        return derive_messages(events)

    def _size_with(self, session: Session, data: CompactionData, request: GenerateOptions) -> int:
        return estimate_request(request.system, request.tools, self._derived_with(session, data))

    def _report(self, agent: Agent, state: _State, event: CompactionEvent, tokens: int) -> CompactionResult:
        """Count the attempt, emit its notice(s) and say what happened."""
        data = event.data
        after = tokens if data.tokens_after is UNSET else data.tokens_after
        automatic = data.trigger != "manual"
        if data.error is not UNSET:
            compacted = False
            message = f"compaction failed: {data.error}"
            relieved = False
        else:
            compacted = True
            what = "summarized" if data.summary is not UNSET else f"pruned {len(data.pruned)} old tool results"
            message = f"compacted the history ({what}): ~{tokens} -> ~{after} tokens"
            model = agent.options.model
            relieved = not automatic or model is None or after < self.config.threshold * self.config.window(model)
        if automatic:
            state.failures = 0 if relieved else state.failures + 1
        elif compacted:  # a manual compaction that worked gives automatic compaction a fresh start
            state.failures = 0
            state.stopped = False
        self._notify(
            agent,
            CompactionNotice(
                kind="compacted" if compacted else "failed",
                trigger=data.trigger,
                message=message,
                tokens_before=tokens,
                tokens_after=after,
            ),
        )
        if automatic and state.failures >= self.config.max_failures:
            state.stopped = True
            stop = (
                f"automatic compaction stopped after {state.failures} attempts that did not bring the history "
                f"under the threshold; the session may outgrow the context window (try /compact or a new session)"
            )
            self.own_ctx.logger.warn('agent "%s": %s', agent.id, stop)
            self._notify(
                agent,
                CompactionNotice(
                    kind="stopped", trigger=data.trigger, message=stop, tokens_before=tokens, tokens_after=after
                ),
            )
        return CompactionResult(
            compacted=compacted, message=message, tokens_before=tokens, tokens_after=after, event=event
        )

    def _notify(self, agent: Agent, notice: CompactionNotice) -> None:
        try:
            self.own_ctx.emit(AGENT_COMPACTION, agent, notice)
        except Exception as error:
            self.own_ctx.logger.warn('agent "%s": agent/compaction listener threw: %s', agent.id, error)


def _with_after(data: CompactionData, after: int) -> CompactionData:
    return msgspec.structs.replace(data, tokens_after=after)
