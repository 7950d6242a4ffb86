"""The sub-agent vocabulary: what a spawn asks for, what the logs record, what a run reports.

A sub-agent is a child agent on a session of its own, started by a parent agent
(usually from the parent's ``subagent`` tool call). The two logs link both ways:

* the child's header names the parent (``parent_session``, ``parent_call_id``,
  ``origin: "subagent"``, ``delegation_depth``; see
  :class:`~dsh.core.session.SessionHeader`);
* the parent's log holds a ``subagent/start`` event naming the child's session when
  the child starts, and a ``subagent/end`` event with the child's outcome and token
  usage when it settles (inside the parent's open turn, else in a one-shot
  ``injection`` turn of its own), so usage rolls up into the parent's log
  (:func:`dsh.core.usage.summarize_usage` counts it)::

    {"type":"subagent/start","seq":7,"time":0,"data":{"taskId":"subagent-1","childSession":"s-1",
     "childAgent":"main/subagent-1","description":"scan","background":false,"depth":1,"callId":"c1"}}
    {"type":"subagent/end","seq":9,"time":0,"data":{"taskId":"subagent-1","childSession":"s-1",
     "status":"completed","usage":{"inputTokens":10,...},"callId":"c1","reason":{"kind":"completed"}}}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from msgspec import UNSET, Struct, UnsetType

from dsh.core.agent import Agent, AgentId, AgentOptions
from dsh.core.llm.types import Count
from dsh.core.session import SessionEventBase, SessionId, TurnEndReason
from dsh.core.usage.types import TokenTotals

SubagentStatus: TypeAlias = Literal["running", "completed", "failed", "cancelled"]
"""A run's state: ``running`` until it settles, then one of the other three (terminal)."""

SubagentOutcome: TypeAlias = Literal["completed", "failed", "cancelled"]
"""How a run settled: its child's turn completed, ended otherwise, or was cancelled."""


class SubagentStartData(Struct, frozen=True, kw_only=True, rename="camel"):
    """``subagent/start``: a child started. ``tools`` is its allowlist (absent: every tool the
    parent may use), ``model`` the model it asks (absent: the parent's), ``depth`` its
    delegation depth, ``call_id`` the parent's tool call that started it (absent outside one)."""

    task_id: str
    child_session: SessionId
    child_agent: AgentId
    description: str
    background: bool
    depth: Count
    call_id: str | UnsetType = UNSET
    model: str | UnsetType = UNSET
    tools: tuple[str, ...] | UnsetType = UNSET


class SubagentStartEvent(SessionEventBase, frozen=True, tag="subagent/start"):
    """``subagent/start`` in the parent's log (see the module docstring)."""

    data: SubagentStartData


class SubagentEndData(Struct, frozen=True, kw_only=True, rename="camel"):
    """``subagent/end``: a child settled. ``usage`` is the child's whole token usage (its own
    children's included); ``reason`` its last ``turn/end`` reason (absent: it never ran a turn)."""

    task_id: str
    child_session: SessionId
    status: SubagentOutcome
    usage: TokenTotals
    call_id: str | UnsetType = UNSET
    reason: TurnEndReason | UnsetType = UNSET


class SubagentEndEvent(SessionEventBase, frozen=True, tag="subagent/end"):
    """``subagent/end`` in the parent's log (see the module docstring)."""

    data: SubagentEndData


class SubagentResult(Struct, frozen=True, kw_only=True, rename="camel"):
    """What a settled run reports: its status, the child's final answer (the text of its last
    assistant message, ``""`` when it gave none), its usage and last turn-end reason."""

    task_id: str
    child_session: SessionId
    status: SubagentOutcome
    output: str
    usage: TokenTotals
    reason: TurnEndReason | UnsetType = UNSET


class SubagentProgress(Struct, frozen=True, kw_only=True, rename="camel"):
    """One step of a child's visible progress (the payload of ``subagent/progress``).

    ``kind`` ``tool``: the child started a tool call, ``title`` is its card title (the
    tool's own presentation, else its name). ``kind`` ``message``: the child logged an
    assistant message, ``text`` is its text. ``call_id`` is the parent's call that
    started the child (absent outside one): a front end shows the progress inside that
    call's card.
    """

    task_id: str
    child_session: SessionId
    kind: Literal["tool", "message"]
    title: str = ""
    text: str = ""
    call_id: str | UnsetType = UNSET


@dataclass(frozen=True)
class SubagentRequest:
    """What a caller asks of :meth:`Subagents.spawn`.

    ``prompt`` is the child's first (and only) user message. ``tools`` is an
    allowlist of tool names, each of which the parent must be allowed to use (None:
    everything the parent may use); the sub-agent tools themselves are removed once
    the child would reach the depth limit. ``model`` defaults to the parent's;
    ``system_prompt`` is added to the child's system prompt. ``call_id`` names the
    parent's tool call that asked (linked in both logs); ``background`` only marks
    the run (its ``subagent/end`` then also leaves the parent a notice).
    """

    prompt: str
    description: str = ""
    tools: tuple[str, ...] | None = None
    model: str | None = None
    system_prompt: str | None = None
    call_id: str | None = None
    background: bool = False


@dataclass
class SubagentSpawn:
    """The payload of the ``subagent/spawn`` waterfall, before the child exists.

    ``parent`` and ``request`` are what was asked; ``depth`` the child's delegation
    depth; ``tools`` the resolved allowlist (None: every tool the parent may use);
    ``options`` the child's agent options (model, system prompt, step limit, and
    ``extra`` for plugins). A listener may *narrow* the child before it starts:
    remove tools, put a narrower permission mode in ``options.extra``, or raise to
    refuse the spawn (the caller gets the error; nothing was started). Widening the
    allowlist beyond the parent's is refused after the waterfall.
    """

    parent: Agent
    request: SubagentRequest
    depth: int
    tools: tuple[str, ...] | None
    options: AgentOptions
