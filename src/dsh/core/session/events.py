"""The events the session store dispatches (SPEC §3.5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.kernel import EmitEvent, ParallelEvent

if TYPE_CHECKING:
    from dsh.core.session.session import Session
    from dsh.core.session.types import SessionEvent

SESSION_CREATED: EmitEvent[[Session]] = EmitEvent(
    "session/created",
    doc="""``(session)``: a session was created through the store, once per ``create``.

    Fired after the session is stored, before ``create`` returns; ``session.events`` is
    then exactly its seed. Persistence backends start tracking the session here. A
    listener that raises rolls the creation back (the session leaves the store, its
    ``on_append`` is cleared) and the error reaches the ``create`` caller; the id can be
    used again.""",
)

SESSION_DISPOSED: EmitEvent[[Session]] = EmitEvent(
    "session/disposed",
    doc="""``(session)``: a session left the store: the plugin that created it was disposed.

    Fired once per session that ``session/created`` announced, after it was removed
    from the store and silenced (no ``session/event`` follows). It says the session
    has no live owner any more, not that its log is deleted. Persistence backends
    retire the session here (its last events made durable, its writer claim given up)
    so that a process hosting many sessions in turn does not keep every one. A raising
    listener is logged and skips the listeners after it; the teardown goes on.""",
)

SESSION_EVENT: EmitEvent[[Session, SessionEvent]] = EmitEvent(
    "session/event",
    doc="""``(session, event)``: ``event`` was just appended to ``session``'s log.

    Synchronous and called *after* the push: a listener that raises makes
    ``Session.append`` raise with the event already logged. Listeners must not append
    to the same session re-entrantly. ``event`` is the logged value itself, immutable:
    a listener may keep it past the call (a write buffer) without copying it. Not
    fired for seeded events or after the creating plugin was disposed.""",
)

SESSION_FLUSH: ParallelEvent[[Session]] = ParallelEvent(
    "session/flush",
    doc="""``(session)``: an awaited durability checkpoint.

    The agent loop awaits it after every ``turn/end``. A persistence listener returns
    an awaitable that settles once everything logged so far is durable; a failure
    rejects the flush (the loop reports it, it never becomes a session event).""",
)

SESSION_CHECKPOINT: ParallelEvent[[Session]] = ParallelEvent(
    "session/checkpoint",
    doc="""``(session)``: an awaited write checkpoint, cheaper than ``session/flush``.

    The agent loop awaits it before every model request (the turn's user messages and
    every finished step) and before a step's tool calls run (the assistant message that
    asks for them): those are then written to storage (they survive the death of the
    process), though not necessarily synced to the disk (that waits for the next
    ``session/flush``). A failure rejects the checkpoint; the loop fails the step with
    it before the model is called or the tools run.""",
)
