"""The testable core of ui-stdio: :func:`create_stdio_chat` (SPEC §15).

Everything the chat touches outside the kernel comes in through a :class:`StdioRuntime`:
where lines come from, where text goes, how the process exits, and the timer that delays
the exit. The plugin's ``apply`` binds the real stdin, stdout and ``SystemExit``; a
front end (``dsh chat``) or a test binds its own.

Input: each non-blank line (stripped) goes to the agent named by ``config.agent``:
``steer`` while it is ``running``, else ``send``. A line for a missing agent is logged
and dropped. With ``oneTurnPerLine`` (for input that is not a terminal: a pipe, a
file) lines wait in order and each is sent as its own turn once the previous one has
ended, instead of steering or joining it. A line naming a slash command runs it
instead (:mod:`dsh.plugins.ui_stdio.commands`).

Exit on end of input: when no line was ever submitted, exit(0) is scheduled at once;
otherwise only after that agent was seen ``running`` and is ``idle`` again (a missing
agent counts as settled) and no line is waiting. The exit runs :data:`EXIT_DELAY` seconds later, is scheduled
at most once, and never runs once the chat is disposed.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterable, Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from dsh.core.agent import (
    AGENT_STATUS,
    AGENT_STREAM_CHUNK,
    AGENT_TURN_END,
    AGENT_TURN_START,
    AGENTS,
    Agent,
    AgentStatus,
)
from dsh.core.llm import StreamChunk, text
from dsh.core.session import SESSION_EVENT, Session, SessionEvent
from dsh.kernel import Context, Disposer, Effect, Timer, TimerHandle
from dsh.plugins.ui_stdio.commands import ChatCommands
from dsh.plugins.ui_stdio.render import PROMPT, Renderer

EXIT_DELAY = 0.2
"""Seconds between "work has settled after end of input" and ``exit(0)``: time for
output and the last checkpoint to drain. Repeated triggers within it coalesce."""


class StdioChatConfig(BaseModel):
    """ui-stdio config.

    ``welcome`` is printed once at start, followed by the prompt. ``agent`` is the id
    of the agent that typed lines go to and whose settling gates the exit; rendering
    covers every agent.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    welcome: str = "ready."
    agent: str = "main"
    one_turn_per_line: bool = Field(default=False, alias="oneTurnPerLine")


class TextSink(Protocol):
    """Where rendered text goes (``sys.stdout`` fits): ``write`` then ``flush`` per piece."""

    def write(self, text: str, /) -> object: ...

    def flush(self) -> object: ...


@dataclass(frozen=True)
class StdioRuntime:
    """The outside world of one chat.

    ``input`` is iterated once, on a task of the chat's fiber, until it ends (end of
    input) or the chat is disposed (the task is cancelled inside ``__anext__``, which
    must then release what it holds; :func:`~dsh.plugins.ui_stdio.lines.read_lines`
    does). ``output`` receives rendered text. ``exit`` is called with 0 from a timer
    callback when the chat decides to end the process. ``timer`` schedules that call
    (None: the running loop's ``call_later``). ``notice`` shows a command's reply and the
    prompt after it (None: both are written to ``output``).
    """

    input: AsyncIterable[str]
    output: TextSink
    exit: Callable[[int], object]
    timer: Timer | None = None
    notice: Callable[[str], None] | None = None


def chat_config(config: StdioChatConfig | Mapping[str, Any] | None) -> StdioChatConfig:
    """``config`` validated with defaults applied (None and ``{}`` give the defaults)."""
    if isinstance(config, StdioChatConfig):
        return config
    return StdioChatConfig.model_validate(dict(config or {}))


def create_stdio_chat(
    ctx: Context, config: StdioChatConfig | Mapping[str, Any] | None, runtime: StdioRuntime
) -> Effect:
    """Start a chat on ``runtime`` on behalf of ``ctx``'s fiber and return its disposer.

    At once: the render listeners (every agent) and the ``agent/status`` listener are
    registered, the welcome and the prompt are written, and a task of ``ctx``'s fiber
    starts reading ``runtime.input``. ``ctx`` must reach the ``agents`` service.

    The returned effect (also run when ``ctx``'s fiber is disposed) marks the chat
    disposed, cancels a scheduled exit, removes the listeners and stops the input task;
    its awaitable resolves once that task has ended. After it, the chat never exits the
    process and handles no more input (safe across a plugin reload). If writing the
    welcome raises, everything registered so far is removed and the error propagates.
    """
    chat = _StdioChat(ctx, chat_config(config), runtime)
    return ctx.effect(chat.start, "ui-stdio chat")


class _StdioChat:
    """One chat's state; see :func:`create_stdio_chat`."""

    def __init__(self, ctx: Context, config: StdioChatConfig, runtime: StdioRuntime) -> None:
        self.ctx = ctx
        self.config = config
        self.runtime = runtime
        self.agents = ctx[AGENTS]
        self.renderer = Renderer(self.write)
        self.disposed = False
        self.input_closed = False
        self.submitted = False
        self.saw_running = False
        self.exit_timer: TimerHandle | None = None
        self.waiting: deque[str] = deque()  # oneTurnPerLine: lines not sent yet
        self.in_turn = False  # oneTurnPerLine: a sent line's turn has not ended yet
        self.commands = ChatCommands(ctx, self.show, lambda: self.agents.get(self.config.agent), self.maybe_exit)

    def write(self, piece: str) -> None:
        output = self.runtime.output
        output.write(piece)
        output.flush()

    def show(self, message: str | None) -> None:
        """A command's reply (None: none), then the prompt."""
        notice = self.runtime.notice
        if notice is None:
            self.write(PROMPT if message is None else f"{message}\n{PROMPT}")
        elif message is not None:
            notice(message)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Generator[Disposer, None, None]:
        ctx = self.ctx
        renderer = self.renderer
        yield ctx.on(AGENT_STREAM_CHUNK, self.on_chunk)
        yield ctx.on(AGENT_TURN_START, self.on_turn_start)
        yield ctx.on(AGENT_TURN_END, lambda _agent, _turn, _reason: renderer.turn_end())
        yield ctx.on(SESSION_EVENT, self.on_session_event)
        status_listener = ctx.on(AGENT_STATUS, self.on_status)
        yield status_listener
        self.write(self.config.welcome + PROMPT)
        reader = ctx.spawn(self.read_input(), "ui-stdio input")

        def stop() -> Any:
            self.disposed = True
            if self.exit_timer is not None:
                self.exit_timer.cancel()
            status_listener()
            reader.cancel()
            return asyncio.wait([reader])

        yield stop

    async def read_input(self) -> None:
        try:
            async for line in self.runtime.input:
                self.on_line(line)
        except Exception as error:
            self.ctx.logger.error("ui-stdio: reading input failed, treating it as ended: %s", error)
        self.input_closed = True
        self.maybe_exit()

    # ---------------------------------------------------------------- rendering
    def on_chunk(self, _agent: Agent, _turn: int, _step: int, chunk: StreamChunk) -> None:
        self.renderer.chunk(chunk)

    def on_turn_start(self, agent: Agent, turn: int) -> None:
        self.renderer.turn_start(agent.id, turn)

    def on_session_event(self, _session: Session, event: SessionEvent) -> None:
        self.renderer.session_event(event)

    # -------------------------------------------------------------------- input
    def on_line(self, line: str) -> None:
        content = line.strip()
        if not content or self.disposed or self.commands.dispatch(content):
            return
        if self.config.one_turn_per_line:
            self.waiting.append(content)
            self.send_waiting()
            return
        self.submit(content)

    def send_waiting(self) -> None:
        """oneTurnPerLine: send the next waiting line unless a sent line's turn is still going."""
        if self.in_turn or not self.waiting:
            return
        agent = self.agents.get(self.config.agent)
        if agent is not None and agent.status == "running":  # a turn of its own: the line waits for its end
            return
        self.saw_running = False
        self.in_turn = self.submit(self.waiting.popleft())
        if not self.in_turn:
            self.send_waiting()

    def submit(self, content: str) -> bool:
        """Give ``content`` to the agent (steer while running, else send); False when it was dropped."""
        agent_id = self.config.agent
        agent = self.agents.get(agent_id)
        if agent is None:
            self.ctx.logger.error('ui-stdio: agent "%s" is not running', agent_id)
            return False
        self.submitted = True
        try:
            if agent.status == "running":
                agent.steer([text(content)])
            else:
                agent.send([text(content)])
        except Exception as error:
            self.ctx.logger.error('ui-stdio: agent "%s" did not take the line: %s', agent_id, error)
            return False
        return True

    # --------------------------------------------------------------------- exit
    def on_status(self, agent: Agent, status: AgentStatus) -> None:
        if agent.id != self.config.agent:
            return
        if status == "running":
            self.saw_running = True
        elif status == "idle":
            if self.in_turn and self.saw_running:
                self.in_turn = False
            self.send_waiting()
            self.maybe_exit()

    def maybe_exit(self) -> None:
        if self.disposed or not self.input_closed or self.exit_timer is not None or self.in_turn:
            return
        if self.commands.busy:
            return
        if self.submitted:
            agent = self.agents.get(self.config.agent)
            if not self.saw_running or (agent is not None and agent.status != "idle"):
                return
        timer = self.runtime.timer or asyncio.get_running_loop().call_later
        self.exit_timer = timer(EXIT_DELAY, lambda: self.runtime.exit(0))
