"""The ``invariants`` plugin: dev-mode contract checks on the live event stream (SPEC §13).

Load it in tests and demos, never in production. It only listens:

* ``session/created`` and, at apply, every session that already exists: replay the
  log through a fresh :class:`~dsh.plugins.invariants.trace.SessionTrace` (so a
  re-applied plugin rebuilds its state), checking each event;
* ``session/event``: check the event;
* ``agent/status``: reject a repeated status and anything after ``disposed``.

A violation raises :class:`~dsh.core.errors.InvariantError` out of the emitter: out
of ``Session.append`` (after the event was logged) or ``SessionStore.create`` (which
then rolls the session back). Traces and statuses are keyed by the session and the
agent, weakly where the object supports weak references (see
:class:`~dsh.plugins.invariants.object_table.ObjectTable`); either way they go with the
plugin's fiber.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from dsh.core.agent import AGENT_STATUS, Agent, AgentStatus
from dsh.core.errors import InvariantError
from dsh.core.session import SESSION_CREATED, SESSION_EVENT, SESSIONS, Session, SessionEvent
from dsh.kernel import Context
from dsh.plugins.invariants.object_table import ObjectTable
from dsh.plugins.invariants.trace import SessionTrace, check_event

name = "invariants"
inject = [SESSIONS.name]


class Config(BaseModel):
    """The plugin takes no settings (logged events are immutable values: nothing to freeze)."""

    model_config = ConfigDict(extra="forbid")


def apply(ctx: Context, config: Config) -> None:
    """Install the checks; every listener is owned by ``ctx``'s fiber and goes with it."""
    traces: ObjectTable[Session, SessionTrace] = ObjectTable()
    statuses: ObjectTable[Agent, AgentStatus] = ObjectTable()

    def replay(session: Session) -> None:
        trace = SessionTrace()
        traces[session] = trace
        for event in session.events:
            check_event(trace, event)

    def on_event(session: Session, event: SessionEvent) -> None:
        trace = traces.get(session)
        if trace is None:  # an event emitted for a session the store never announced
            trace = traces[session] = SessionTrace()
        check_event(trace, event)

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
