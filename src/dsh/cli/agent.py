"""The agent a command drives, and how its turns ended.

:func:`start_agent` creates (or resumes) agent :data:`MAIN_AGENT` through the booted
tree's ``agents`` registry, so whichever loop the tree loaded runs it. A new session
gets a random id and the workspace (``--cwd``) as its ``cwd``; a resumed one keeps
its own; each retry of a failed model request is said on stderr (:func:`retry_line`), and
so is each automatic compaction (:func:`say_compaction`).
:func:`turn_outcome` reads the log, never flags, to say how the turn a
prompt started has ended, and :func:`exit_status` maps that to ``dsh``'s exit status.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass

from dsh.cli.errors import CliError
from dsh.cli.profile import DEFAULT_SYSTEM_PROMPT, Tree
from dsh.cli.session_ids import resolve_resume, resolve_session_id
from dsh.cli.settings import Settings
from dsh.core.agent import (
    AGENT_RETRY,
    AGENTS,
    Agent,
    AgentOptions,
    CreateAgentOptions,
    ResumeAgentOptions,
    RetryNotice,
)
from dsh.core.errors import HarnessError
from dsh.core.llm import LLM, variant_tag
from dsh.core.persistence import SESSION_PERSISTENCE
from dsh.core.session import (
    AbortedReason,
    CompletedReason,
    ErrorReason,
    MaxCostReason,
    MaxStepsReason,
    MaxTokensReason,
    MessageTrigger,
    Session,
    SessionMeta,
    TurnEndEvent,
    TurnEndReason,
    TurnStartEvent,
    logged_model,
)
from dsh.kernel import Context
from dsh.plugins.compaction import AGENT_COMPACTION, CompactionNotice

MAIN_AGENT = "main"
"""The id of the agent ``dsh run`` and ``dsh chat`` drive."""

EXIT_COMPLETED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_MAX_TOKENS = 3
EXIT_LIMIT = 4
"""A limit stopped the run: a turn reached ``--max-steps``, or ``--max-turns`` turns ran and more was queued."""
EXIT_INTERRUPTED = 130

MAX_STEPS_HINT = "the turn reached its step limit; raise it with --max-steps N"
"""What ``dsh`` says of a turn that ended ``max-steps``."""


def agent_model(root: Context, tree: Tree) -> str | None:
    """The model to ask: the tree's (``--model`` or the profile's), else the first one the tree serves."""
    if tree.model is not None:
        return tree.model
    llm = root.get(LLM)
    models = llm.models() if llm is not None else []
    return models[0] if models else None


async def fork_session(root: Context, source: str) -> str:
    """Store a fork of session ``source`` (any unique start of its id) after its last completed turn; its id.

    Raises :class:`CliError` when the tree has no persistence, no such session is
    stored, or it has no completed turn.
    """
    persistence = root.get(SESSION_PERSISTENCE)
    if persistence is None:
        raise CliError(f'cannot fork session "{source}": the tree provides no session persistence')
    try:
        source_id = await resolve_session_id(persistence, source)
        return (await persistence.fork(source_id)).meta.id
    except (CliError, HarnessError) as error:
        raise CliError(f'cannot fork session "{source}": {error}') from error


async def start_agent(
    root: Context,
    tree: Tree,
    settings: Settings,
    resume: str | None = None,
    *,
    fork: str | None = None,
    max_steps: int | None = None,
) -> Agent:
    """Create agent :data:`MAIN_AGENT` on a fresh session in ``settings.cwd``, or resume session ``resume``.

    With ``fork``, the agent resumes a new fork of that stored session instead
    (:func:`fork_session`). A resumed session asks the model its log last selected
    (``model/select``: an editor's switch over ACP) unless ``--model`` names one.
    ``max_steps`` (``--max-steps``) caps each turn's steps;
    None leaves it to the tree's ``agent-loop`` config. The agent belongs to
    ``root``'s fiber. Raises :class:`CliError` when the tree has no ``agents``
    service or the registry refuses (no loop loaded, an unknown or damaged session,
    persistence missing for a resume).
    """
    agents = root.get(AGENTS)
    if agents is None:
        raise CliError(f"{tree.label} provides no agents service: add an entry with name agents (and agent-loop)")
    options = AgentOptions(
        model=agent_model(root, tree),
        system_prompt=settings.system_prompt or DEFAULT_SYSTEM_PROMPT,
        max_steps=max_steps,
    )
    resume = await fork_session(root, fork) if fork is not None else await resolve_resume(root, resume)
    root.on(AGENT_RETRY, lambda _agent, _turn, _step, notice: print(retry_line(notice), file=sys.stderr, flush=True))
    root.on(AGENT_COMPACTION, say_compaction)
    try:
        if resume is not None:
            agent = await agents.resume(
                ResumeAgentOptions(agent_id=MAIN_AGENT, resume_session_id=resume, agent_options=options)
            )
            selected = logged_model(agent.session.events)
            if selected is not None and settings.model is None:  # an editor's choice, unless --model says otherwise
                agent.options.model = selected
            return agent
        return agents.create(
            CreateAgentOptions(
                agent_id=MAIN_AGENT,
                session_id=str(uuid.uuid4()),
                meta=SessionMeta(cwd=str(settings.cwd)),
                agent_options=options,
            )
        )
    except HarnessError as error:
        what = f'cannot resume session "{resume}"' if resume is not None else "cannot start the agent"
        raise CliError(f"{what}: {error}") from error


def say_compaction(_agent: Agent, notice: CompactionNotice) -> None:
    """An automatic compaction on stderr: ``dsh: compacted the history (...)`` (a manual one is its command's)."""
    if notice.trigger != "manual":
        print(f"dsh: {notice.message}", file=sys.stderr, flush=True)


def retry_line(notice: RetryNotice) -> str:
    """``dsh: retrying in 4 s (429 RATE_LIMIT), attempt 2 of 4``: one line per scheduled retry."""
    error = notice.error
    why = error.code if error.status is None else f"{error.status} {error.code}"
    return (
        f"dsh: retrying in {notice.delay_ms / 1000:.3g} s ({why}), "
        f"attempt {notice.attempt + 1} of {notice.max_attempts}"
    )


@dataclass(frozen=True)
class TurnOutcome:
    """How the first turn at or after a log position ended.

    ``turn`` is None when no turn started there (the turn failed before its
    ``turn/start``); ``reason`` is the ``turn/end`` reason, None while it is open.
    """

    turn: int | None
    reason: TurnEndReason | None


def turn_outcome(session: Session, since: int) -> TurnOutcome:
    """The outcome of the first message-triggered turn logged at ``seq >= since``."""
    turn: int | None = None
    for event in session.events[since:]:
        if turn is None:
            if type(event) is TurnStartEvent and type(event.data.trigger) is MessageTrigger:
                turn = event.data.turn
        elif type(event) is TurnEndEvent and event.data.turn == turn:
            return TurnOutcome(turn, event.data.reason)
    return TurnOutcome(turn, None)


def exit_status(reason: TurnEndReason | None) -> int:
    """0 completed, 3 max-tokens, 4 max-steps, 130 aborted, 1 anything else (error, disposed, unknown, never ended)."""
    kind = type(reason)
    if kind is CompletedReason:
        return EXIT_COMPLETED
    if kind is MaxTokensReason:
        return EXIT_MAX_TOKENS
    if kind is MaxStepsReason:
        return EXIT_LIMIT
    if kind is AbortedReason:
        return EXIT_INTERRUPTED
    return EXIT_FAILED


def describe_reason(reason: TurnEndReason | None) -> str:
    """A turn-end reason for a human: ``completed``, ``aborted (interrupted)``, ``error: msg [CODE]``.

    ``max-steps`` says which flag raises the limit. A reason of a kind this version
    does not know is shown by its kind.
    """
    if reason is None:
        return "did not end"
    if type(reason) is MaxStepsReason:
        return f"max-steps ({MAX_STEPS_HINT})"
    if type(reason) is ErrorReason:
        return f"error: {reason.message}" + (f" [{reason.code}]" if reason.code else "")
    if type(reason) is AbortedReason and reason.reason:
        return f"aborted ({reason.reason})"
    if type(reason) is MaxCostReason:
        return f"max-cost (spent ${reason.cost:.6f} of the ${reason.limit:.6f} budget)"
    return variant_tag(reason) or "unknown"
