"""The sub-agent seam: the ``subagents`` service (:class:`Subagents`) and a run's handle.

A plugin provides the service (``dsh.plugins.subagent``); callers reach it as
``ctx[SUBAGENTS]``. Ownership: a child belongs to the fiber of whoever spawned it
(reached through their own context), and to its parent agent: it is cancelled when
the parent's turn is cancelled (``aborted``) or the parent is disposed, and disposed
with the plugin. No child outlives its owner.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

from dsh.core.agent import Agent
from dsh.core.subagent.types import SubagentRequest, SubagentResult, SubagentStatus
from dsh.kernel import Context, Service, ServiceKey

DELEGATION_TOOLS: tuple[str, ...] = ("subagent", "subagent_output", "subagent_cancel")
"""The model-facing sub-agent tools: a child at the depth limit never gets them."""


class SubagentRun(Protocol):
    """One child, from its start until it settles (then its result never changes)."""

    @property
    def task_id(self) -> str:
        """The run's id (``subagent-<n>``), unique in its service."""
        ...

    @property
    def parent(self) -> Agent:
        """The agent that started the child."""
        ...

    @property
    def child(self) -> Agent:
        """The child agent (disposed once the run has settled)."""
        ...

    @property
    def request(self) -> SubagentRequest:
        """What was asked."""
        ...

    @property
    def status(self) -> SubagentStatus:
        """``running`` until settled."""
        ...

    @property
    def result(self) -> SubagentResult | None:
        """The outcome once settled, else None."""
        ...

    def cancel(self, reason: str | None = None) -> None:
        """Cancel the child's work (a no-op once settled); :meth:`wait` then reports ``cancelled``."""
        ...

    async def wait(self) -> SubagentResult:
        """Return the outcome once the child has settled and been disposed.

        Cancelling the waiter does not cancel the run.
        """
        ...


class Subagents(Service, ABC):
    """The service that starts children (see the module docstring).

    Errors are :class:`~dsh.core.errors.HarnessError`: ``INVALID_ARGS`` (an empty
    prompt, a tool the parent may not use), ``DEPTH_LIMIT`` (the child would be deeper
    than the limit), ``DISPOSED`` (the parent is disposed), and whatever a
    ``subagent/spawn`` listener or the agents factory raises. A failed spawn leaves
    nothing behind.
    """

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, SUBAGENTS)

    @abstractmethod
    async def spawn(self, parent: Agent, request: SubagentRequest) -> SubagentRun:
        """Start a child of ``parent`` on a new session and send it ``request.prompt``.

        Returns once the child runs (``subagent/start`` is in the parent's log); await
        :meth:`SubagentRun.wait` for its answer.
        """

    @abstractmethod
    def get(self, task_id: str) -> SubagentRun | None:
        """The run with that id (running or settled), or None."""

    @abstractmethod
    def runs(self, parent: Agent | None = None) -> list[SubagentRun]:
        """The runs of ``parent`` (every run when None), oldest first."""

    @abstractmethod
    def admits(self, agent: Agent, tool: str) -> bool:
        """True when ``agent`` may see and call ``tool``: always, unless it is a child whose
        allowlist leaves the tool out, or that was denied it (the sub-agent tools at the
        depth limit, or a tool its own parent was denied)."""


SUBAGENTS: ServiceKey[Subagents] = ServiceKey("subagents")
"""The sub-agent service's key (``inject: ["subagents"]``)."""
