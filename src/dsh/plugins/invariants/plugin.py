"""The ``invariants`` plugin: dev-mode contract checks on the live event stream (SPEC §13).

Load it in tests and demos, never in production. It only listens:

* ``session/created`` and, at apply, every session that already exists: replay the
  log through a fresh :class:`~dsh.plugins.invariants.trace.SessionTrace` (so a
  re-applied plugin rebuilds its state), checking and freezing each event;
* ``session/event``: check the event, then freeze its ``data``;
* ``agent/status``: reject a repeated status and anything after ``disposed``.

A violation raises :class:`~dsh.core.errors.InvariantError` out of the emitter: out
of ``Session.append`` (after the event was logged) or ``SessionStore.create`` (which
then rolls the session back). Traces and statuses are keyed by the session and the
agent, weakly where the object supports weak references (see
:class:`~dsh.plugins.invariants.object_table.ObjectTable`); either way they go with the
plugin's fiber.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from dsh.core.agent import AGENT_STATUS, Agent, AgentStatus
from dsh.core.errors import InvariantError
from dsh.core.session import SESSION_CREATED, SESSION_EVENT, SESSIONS, Session, SessionEvent
from dsh.kernel import Context
from dsh.plugins.invariants.freeze import freeze_data
from dsh.plugins.invariants.object_table import ObjectTable
from dsh.plugins.invariants.trace import SessionTrace, check_event

_set_item: Callable[[Any, str, Any], None] = dict.__setitem__
"""Sets a key of the logged event dict itself (a plain dict, or a dict subclass that refuses item assignment)."""

name = "invariants"
inject = [SESSIONS.name]


class Config(BaseModel):
    """``freeze``: make logged event data immutable (mutation raises ``TypeError``)."""

    model_config = ConfigDict(extra="forbid")

    freeze: bool = True


def _freeze_event(event: SessionEvent) -> None:
    """Replace the logged event's ``data`` by its frozen twin, in the logged dict itself."""
    data = event.get("data")
    frozen = freeze_data(data)
    if frozen is not data:
        _set_item(event, "data", frozen)


def apply(ctx: Context, config: Config) -> None:
    """Install the checks; every listener is owned by ``ctx``'s fiber and goes with it."""
    freeze = config.freeze
    traces: ObjectTable[Session, SessionTrace] = ObjectTable()
    statuses: ObjectTable[Agent, AgentStatus] = ObjectTable()

    def replay(session: Session) -> None:
        trace = SessionTrace()
        traces[session] = trace
        for event in session.events:
            check_event(trace, event)
            if freeze:
                _freeze_event(event)

    def on_event(session: Session, event: SessionEvent) -> None:
        trace = traces.get(session)
        if trace is None:  # an event emitted for a session the store never announced
            trace = traces[session] = SessionTrace()
        check_event(trace, event)
        if freeze:
            _freeze_event(event)

    def on_status(agent: Agent, status: AgentStatus) -> None:
        previous = statuses.get(agent)
        if previous == status:
            raise InvariantError(f"agent/status repeated {status} (no-op transition)")
        if previous == "disposed":
            raise InvariantError(f"agent/status left terminal state disposed → {status}")
        statuses[agent] = status

    for session in ctx[SESSIONS].list():
        replay(session)
    ctx.on(SESSION_CREATED, replay)
    ctx.on(SESSION_EVENT, on_event)
    ctx.on(AGENT_STATUS, on_status)
