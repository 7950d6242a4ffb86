"""The ``agent/*`` event catalog (SPEC §7.2): the one place these events are declared.

The concrete loop emits them; UIs, hooks and orchestrators listen. Payload order is
part of the contract. ``turn`` and ``step`` are the numbers logged in the session
(turns from 1, steps from 1 within a turn; step 0 names "no step"). Payload values
are the immutable vocabulary shared with the session log (content is a tuple of
blocks): listeners read them as they are, and nothing copies them.

What a raising listener does (SPEC §1.4, §17.2). An ``emit`` stops at the first
listener that raises; a listener that returns a coroutine runs it as a task of its
own plugin, where a failure is only logged. A synchronous raise:

* propagates to the caller for ``agent/created`` (to whoever registered the agent,
  after the registration was rolled back) and ``agent/queued`` (to the caller of
  ``send``/``steer``; the input stays queued);
* fails the turn, which is closed without ``agent/turn-end``, for the boundary
  events ``agent/turn-start``, ``agent/step-start`` and ``agent/steering``: the
  open step is closed, one ``error`` event is logged, ``turn/end`` gets reason
  ``error`` (``disposed`` when the agent is being disposed) and ``agent/error``
  reports the failure;
* fails the turn the same way, but the turn still closes normally
  (``agent/turn-end`` fires with reason ``error``), for the events of the model call
  (``agent/request``, ``agent/stream-chunk``, ``agent/request-error``, ``agent/retry``,
  ``agent/step-result``: the reason is ``aborted`` instead when the step's abort fired,
  ``disposed`` when the agent is being disposed),
  for ``agent/step-end`` (caught where it is emitted, after ``step/end`` was
  logged) and for ``agent/turn-continuation``;
* is contained for ``agent/turn-end`` (the turn is already closed: the failure is
  logged and reported as ``agent/error`` only, never as a session event; ignored
  during disposal), ``agent/status`` and ``agent/error`` (logged as a warning), and
  ``agent/disposed`` (logged by the disposal that emitted it).

In every case the loop itself carries on with the next turn. Waterfall listeners
receive ``(*args, next)``, must return what ``next()`` returns unless they own the
decision, and return an awaitable.
"""

from __future__ import annotations

from collections.abc import Awaitable

from dsh.core.agent.types import Agent, AgentStatus, QueuedInfo, RequestFailure, RetryNotice
from dsh.core.llm.types import ContentBlock, GenerateOptions, Message, MessageSource, StreamChunk
from dsh.core.session.types import TurnEndReason
from dsh.kernel import EmitEvent, WaterfallEvent

AGENT_CREATED: EmitEvent[[Agent]] = EmitEvent(
    "agent/created",
    doc="""emit ``(agent)``: an agent was registered and is reachable through ``AgentRegistry.get``.

    A listener that raises rolls the registration back (the registry then emits
    ``agent/disposed``) and the error reaches whoever registered the agent.
    """,
)
"""An agent joined the registry. See ``doc``."""

AGENT_DISPOSED: EmitEvent[[Agent]] = EmitEvent(
    "agent/disposed",
    doc="""emit ``(agent)``: the agent left the registry (its owner was disposed or the
    registration was rolled back). Listeners drop what they hold for it; exceptions are
    logged by the disposer, never raised to anyone.
    """,
)
"""An agent left the registry. See ``doc``."""

AGENT_STATUS: EmitEvent[[Agent, AgentStatus]] = EmitEvent(
    "agent/status",
    doc="""emit ``(agent, status)``: the status changed (never a repeat; nothing follows
    ``disposed``). Waiters of ``when_idle`` are settled before this fires. Contained: a
    raising listener is logged and the loop carries on. A listener may call ``cancel``
    on ``running``; the loop then goes back to idle without starting the turn.
    """,
)
"""An agent's status changed. See ``doc``."""

AGENT_QUEUED: EmitEvent[[Agent, tuple[ContentBlock, ...], QueuedInfo]] = EmitEvent(
    "agent/queued",
    doc="""emit ``(agent, content, QueuedInfo(source, steering))``: ``send`` or ``steer`` accepted input.

    ``source`` is the resolved source; ``steering`` says which queue took it. Steering
    re-queued after its turn ended is not announced again. A raising listener's error
    reaches the caller of ``send``/``steer`` (the input stays queued).
    """,
)
"""Input was accepted by ``send`` or ``steer``. See ``doc``."""

AGENT_TURN_START: EmitEvent[[Agent, int]] = EmitEvent(
    "agent/turn-start",
    doc="""emit ``(agent, turn)``: after ``turn/start`` and the turn's user messages were logged.

    A raising listener fails the turn (logged ``error``, reason ``error``); no
    ``agent/turn-end`` follows.
    """,
)
"""A turn began. See ``doc``."""

AGENT_TURN_END: EmitEvent[[Agent, int, TurnEndReason]] = EmitEvent(
    "agent/turn-end",
    doc="""emit ``(agent, turn, reason)``: after ``turn/end`` was logged with ``reason``.

    Fires for every turn that reached its normal close (completed, aborted, error,
    max-tokens, disposed); not after a raising boundary listener already failed the
    turn. A raising listener is reported as ``agent/error`` only (never as a session
    event: nothing may follow ``turn/end``), and is ignored during disposal.
    """,
)
"""A turn was closed. See ``doc``."""

AGENT_STEP_START: EmitEvent[[Agent, int, int]] = EmitEvent(
    "agent/step-start",
    doc="""emit ``(agent, turn, step)``: after ``step/start`` was logged, before the model is called.

    A listener may ``cancel`` (the step then ends as aborted with reason
    ``cancelled``) or raise ``EndTurn(reason)`` (the step is closed and the turn ends
    with that reason, ``agent/turn-end`` firing); any other raise fails the turn and no
    ``agent/turn-end`` follows.
    """,
)
"""A step began; the model is about to be called. See ``doc``."""

AGENT_STEP_END: EmitEvent[[Agent, int, int]] = EmitEvent(
    "agent/step-end",
    doc="""emit ``(agent, turn, step)``: after ``step/end`` was logged. A raising listener is
    caught here, so the log stays balanced: it fails the turn (logged ``error``, reason
    ``error``), which then closes normally with ``agent/turn-end``. Steering added here
    is run in a further step of the same turn.
    """,
)
"""A step was closed. See ``doc``."""

AGENT_REQUEST: WaterfallEvent[[Agent, int, int, GenerateOptions], Awaitable[GenerateOptions]] = WaterfallEvent(
    "agent/request",
    doc="""waterfall ``(agent, turn, step, options, next) -> Awaitable[GenerateOptions]``.

    Runs before each model call. Listeners edit ``options`` (the model, system prompt,
    tools, messages) and return ``next()``; one that owns the decision may return an
    awaitable of other options without calling ``next()``. A raise fails the step and
    the turn (reason ``error``; ``agent/turn-end`` still fires).
    """,
)
"""Shapes (or replaces) each model request. See ``doc``."""

AGENT_REQUEST_ERROR: WaterfallEvent[[Agent, int, int, RequestFailure], Awaitable[bool]] = WaterfallEvent(
    "agent/request-error",
    doc="""waterfall ``(agent, turn, step, failure, next) -> Awaitable[bool]``.

    Runs when a step's model request failed (the stream raised an ``LlmError`` or
    ended with an error finish) while the step's abort has not fired. True sends
    ``failure.request`` again, unchanged, within the same step; the default (and a
    listener's ``next()`` when no one else decides) is False: the failure ends the
    turn. A listener that owns the decision waits out its backoff before it
    answers True; it runs inside the step's abort race, so a cancel interrupts the
    wait at once (its awaitable is cancelled) and the turn ends ``aborted``. The
    failed attempt's chunks stay logged as ``assistant/chunk`` (the model never sees
    them: no ``assistant/message`` is logged for them) and the next attempt is
    assembled afresh. A raise fails the step and the turn (reason ``error``).
    """,
)
"""Decides whether a failed model request is sent again. See ``doc``."""

AGENT_RETRY: EmitEvent[[Agent, int, int, RetryNotice]] = EmitEvent(
    "agent/retry",
    doc="""emit ``(agent, turn, step, notice)``: a retry policy (the ``llm-retry`` plugin) will send
    the step's failed model request again after ``notice.delay_ms``. UIs show it ("retrying
    in 4 s (429)") and drop what they showed of the failed attempt's stream. Emitted by the
    policy, not the loop; a raise fails the step and the turn (reason ``error``).
    """,
)
"""A failed model request will be retried. See ``doc``."""

AGENT_STEP_RESULT: WaterfallEvent[[Agent, int, int, Message], Awaitable[Message]] = WaterfallEvent(
    "agent/step-result",
    doc="""waterfall ``(agent, turn, step, message, next) -> Awaitable[Message]``.

    Runs on the assembled assistant message before it is logged; the returned message
    is what is logged and drives tool dispatch (a rewrite may add or drop tool calls).
    Listeners return ``next()`` unless they replace the message. A raise fails the step
    and the turn (reason ``error``; ``agent/turn-end`` still fires).
    """,
)
"""Shapes (or replaces) each assistant message before it is logged. See ``doc``."""

AGENT_TURN_CONTINUATION: WaterfallEvent[[Agent, int, bool], Awaitable[bool]] = WaterfallEvent(
    "agent/turn-continuation",
    doc="""waterfall ``(agent, turn, default_decision, next) -> Awaitable[bool]``.

    Decides whether the turn runs another step after a clean step. The default is
    True when the step made tool calls or steering arrived. A listener may short-circuit
    with its own decision; pending steering forces another step regardless. A raise
    fails the turn (reason ``error``; ``agent/turn-end`` still fires).
    """,
)
"""Decides whether a turn runs another step. See ``doc``."""

AGENT_STREAM_CHUNK: EmitEvent[[Agent, int, int, StreamChunk]] = EmitEvent(
    "agent/stream-chunk",
    doc="""emit ``(agent, turn, step, chunk)``: one model stream chunk, after it was logged as
    ``assistant/chunk``. Listeners must be fast (the chunk is immutable and shared with
    the log); a raise fails the step and the turn (reason ``error``; ``agent/turn-end``
    still fires).
    """,
)
"""One streamed model chunk. See ``doc``."""

AGENT_STEERING: EmitEvent[[Agent, int, tuple[ContentBlock, ...], MessageSource]] = EmitEvent(
    "agent/steering",
    doc="""emit ``(agent, turn, content, source)``: steering input was logged as
    ``steering/message`` inside ``turn`` and will be seen by the next step. A raise
    fails the turn and no ``agent/turn-end`` follows.
    """,
)
"""Steering input entered the open turn. See ``doc``."""

AGENT_ERROR: EmitEvent[[Agent, int, int, BaseException]] = EmitEvent(
    "agent/error",
    doc="""emit ``(agent, turn, step, error)``: a failure the loop contained (a failed turn, a
    failed checkpoint, a failure before the turn started; ``step`` is 0 when no step
    applies). Informational: contained, a raising listener is logged and ignored.
    """,
)
"""A failure the loop contained. See ``doc``."""
