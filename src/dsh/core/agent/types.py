"""The agent vocabulary (SPEC §7.1, §7.3): what every UI, hook and orchestrator codes against.

An :class:`Agent` is a live handle on one conversation: it owns one
:class:`~dsh.core.session.Session` and turns queued input into turns of model steps.
This module only names the shape; the concrete loop lives in ``dsh.agent_loop`` and
is reached through the :class:`AgentFactory` seam of the agent registry, so anything
written against these names keeps working if the loop is replaced.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from msgspec import Struct

from dsh.core.errors import LlmError
from dsh.core.llm.types import ContentBlock, GenerateOptions, MessageSource
from dsh.core.session import Session
from dsh.core.session.types import SessionId, SessionMeta, TurnEndReason

AgentId: TypeAlias = str

AgentStatus: TypeAlias = Literal["idle", "running", "disposed"]
"""``idle`` → ``running`` → ``idle`` … and finally ``disposed`` (terminal)."""


@dataclass
class AgentOptions:
    """Per-agent settings; ``None`` means "not set" (a later ``agent/request`` may supply it).

    ``max_steps`` caps the steps of each turn: a turn whose model still asks for
    more after that many steps ends with reason ``max-steps``. None defers to the
    loop's own setting (which may be no limit); otherwise it must be at least 1.

    ``extra`` carries fields added by plugins (the set is merge-extensible); keys
    are the plugin's own names and values are owned by the agent once passed in.
    """

    model: str | None = None
    system_prompt: str | None = None
    max_steps: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class QueuedInfo(Struct, frozen=True):
    """Third payload argument of ``agent/queued`` (an immutable value).

    ``source`` is the resolved source (``UserSource()`` when the caller gave none);
    ``steering`` is True when the message went to the steering queue of a running turn.
    """

    source: MessageSource
    steering: bool


@runtime_checkable
class Agent(Protocol):
    """A live agent. Every method is safe to call from any listener or task on the loop.

    ``send``/``steer``/``inject`` raise once the agent is disposed (message
    ``agent "<id>" is disposed``); ``abort``/``cancel`` never raise. ``content``
    is a sequence of content blocks (a tuple, or a list the agent turns into one);
    the blocks are immutable and logged as they are, never copied.
    """

    @property
    def id(self) -> AgentId:
        """The registry key; unique among live agents."""
        ...

    @property
    def options(self) -> AgentOptions:
        """The options the agent was created with."""
        ...

    @property
    def session(self) -> Session:
        """The session log this agent appends to (the single source of truth)."""
        ...

    @property
    def status(self) -> AgentStatus:
        """The current status; ``disposed`` is terminal."""
        ...

    def send(self, content: Sequence[ContentBlock], *, source: MessageSource | None = None) -> None:
        """Queue a user message (``source`` defaults to ``UserSource()``).

        Starts a turn on a later tick when idle; otherwise joins the next turn.
        """
        ...

    def steer(self, content: Sequence[ContentBlock], *, source: MessageSource | None = None) -> None:
        """While running, inject ``content`` between steps of the current turn; else behave as ``send``."""
        ...

    def inject(self, content: Sequence[ContentBlock], *, source: MessageSource | None = None) -> None:
        """Log a ``context/message`` without running the model.

        Inside the open turn when one is open in the log, else wrapped in a one-shot
        ``injection`` turn that is closed and checkpointed at once.
        """
        ...

    def abort(self, reason: str | None = None) -> None:
        """Abort only the step in flight (reason defaults to ``"aborted"``); a no-op otherwise."""
        ...

    def cancel(self, reason: str | None = None) -> None:
        """Drop queued and steering input, abort the step in flight, and drop a turn about to start.

        Idle with nothing pending, it is a no-op (it must not poison the next prompt).
        """
        ...

    async def when_idle(self) -> None:
        """Return once the agent has left ``running`` with nothing queued.

        Immediate when idle with nothing queued; once disposed, waits for the loop to exit.
        """
        ...


class EndTurn(Exception):  # noqa: N818 - a request, not an error
    """Raised by an ``agent/step-start`` listener to end the turn before the model is called.

    The open step is closed and the turn ends with ``reason`` (``turn/end`` logged,
    ``agent/turn-end`` fired), with no ``error`` event: the way a policy plugin (a cost
    budget) stops a turn with a reason of its own. Raised from any other event it is
    an ordinary failure of that event.
    """

    def __init__(self, reason: TurnEndReason) -> None:
        super().__init__(f"turn ended by a plugin: {reason!r}")
        self.reason = reason


@dataclass(frozen=True)
class CreateAgentOptions:
    """What :meth:`AgentRegistry.create` hands to the factory, verbatim.

    ``session_id`` names the new session; ``meta`` may set its ``cwd`` (absolute) and
    ``parentSession``.
    """

    agent_id: AgentId
    session_id: SessionId
    meta: SessionMeta | None = None
    agent_options: AgentOptions | None = None


@dataclass(frozen=True)
class ResumeAgentOptions:
    """What :meth:`AgentRegistry.resume` hands to the factory: continue a persisted session."""

    agent_id: AgentId
    resume_session_id: SessionId
    agent_options: AgentOptions | None = None


class AgentFactory(Protocol):
    """The seam a concrete loop fills (one per registry, see ``AgentRegistry.set_factory``).

    Both methods run with the registry's caller as the current caller, so every effect
    they register (the session, the agent's registration, its loop) is owned by the
    fiber that asked the registry, and disposing that fiber stops and unregisters the
    agent. They raise (``create_agent``) or reject (``resume``) on a duplicate agent id
    or a session that cannot be created or loaded.
    """

    def create_agent(self, options: CreateAgentOptions) -> Agent:
        """Create a session and start an agent on it."""
        ...

    def resume(self, options: ResumeAgentOptions) -> Awaitable[Agent]:
        """Load a persisted session and start an agent on it."""
        ...


@dataclass(frozen=True)
class RequestFailure:
    """A model request of a step that failed (the payload of ``agent/request-error``).

    ``request`` is the request as sent (a retry sends it again unchanged); ``attempt``
    counts the requests of this step so far, from 1; ``error`` is the failure, an
    in-band error finish included, as an :class:`~dsh.core.errors.LlmError` (its
    ``code``, ``status`` and ``retry_after``).
    """

    request: GenerateOptions
    attempt: int
    error: LlmError


@dataclass(frozen=True)
class RetryNotice:
    """A failed model request will be sent again (the payload of ``agent/retry``).

    ``attempt`` is the number of the request that failed, ``max_attempts`` the most
    the policy sends for this step, ``delay_ms`` the wait before the next one and
    ``error`` the failure.
    """

    attempt: int
    max_attempts: int
    delay_ms: int
    error: LlmError
