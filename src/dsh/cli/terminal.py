"""The rich rendering of ``dsh chat`` on a terminal: markdown answers, a spinner, tool cards.

:class:`TerminalView` watches one agent through the kernel's events and draws on a
``rich`` console:

* a spinner from the start of each model step until its first token;
* the step's text, rendered as markdown live while it streams (reasoning above it,
  dimmed), left on screen when the step ends;
* a card per tool call (the tool's own presentation: for ``bash``, the command and
  its description) and per result (the last lines of output; red when it failed),
  with a spinner while the tool runs, and under it the last :data:`LIVE_LINES` lines
  a bash command printed so far (``bash/output``), with a count of the lines above them;
* a line typed while the agent works (:meth:`TerminalView.typed`) on a line of its
  own, as the user's: the streamed text so far stays where it is and the stream goes
  on below (the ``steering/message`` the agent logs for it is not shown again);
* a closing line when a turn ends other than ``completed``, then the prompt;
* on a retry of a failed model request, the failed attempt's text frozen as it was
  and a spinner until the next attempt streams (the retry's stderr line says why).

At most one live display runs at a time (rich allows no more); :meth:`close` stops
whatever is running. While one runs, the terminal's echo is off (when the view has the
input terminal): a key typed then (Ctrl-C included) would land inside the redrawn text
and be drawn again with it; a line typed then is shown by :meth:`TerminalView.typed`
once it is entered. Listener callbacks never raise into the loop.
"""

from __future__ import annotations

import json
import os
import termios
from collections import deque
from collections.abc import Iterable

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.panel import Panel
from rich.status import Status
from rich.text import Text

from dsh.cli.agent import describe_reason
from dsh.core.agent import AGENT_RETRY, AGENT_STEP_START, AGENT_STREAM_CHUNK, AGENT_TURN_END, Agent, RetryNotice
from dsh.core.bash import BASH_OUTPUT
from dsh.core.llm import ContentBlock, ReasoningDeltaChunk, StreamChunk, TextDeltaChunk, text_of
from dsh.core.session import (
    SESSION_EVENT,
    AbortedReason,
    CompletedReason,
    MaxStepsReason,
    MaxTokensReason,
    Session,
    SessionEvent,
    SteeringMessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndReason,
)
from dsh.core.tools import TOOLS
from dsh.kernel import Context

RESULT_LINES = 12
"""How many trailing lines of a tool result a card shows."""

PROMPT = "[bold cyan]›[/] "
"""What the view prints when the agent waits for input."""

LIVE_LINES = 8
"""How many of the last lines of a running command's output show under its spinner."""


class Echo:
    """Turns the echo of terminal ``fd`` off and on again (nothing when ``fd`` is None or no terminal).

    :meth:`restore` puts back the settings found at construction (idempotent).
    """

    def __init__(self, fd: int | None) -> None:
        self.fd = fd if fd is not None and os.isatty(fd) else None
        self._saved = termios.tcgetattr(self.fd) if self.fd is not None else None
        self.hidden = False

    def _set(self, echo: bool) -> None:
        if self.fd is None or self._saved is None or self.hidden is not echo:
            return
        attrs = termios.tcgetattr(self.fd)
        attrs[3] = attrs[3] | termios.ECHO if echo else attrs[3] & ~termios.ECHO
        termios.tcsetattr(self.fd, termios.TCSANOW, attrs)
        self.hidden = not echo

    def hide(self) -> None:
        """Stop echoing typed keys."""
        self._set(False)

    def show(self) -> None:
        """Echo typed keys again."""
        self._set(True)

    def restore(self) -> None:
        """Put the terminal's settings back as they were at construction."""
        if self.fd is not None and self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSANOW, self._saved)
            self.hidden = False


class OutputTail:
    """The last ``lines`` lines of a stream of text, and how many came before them."""

    def __init__(self, lines: int = LIVE_LINES) -> None:
        self._lines: deque[str] = deque(maxlen=lines)
        self._partial = ""
        self.dropped = 0

    def feed(self, piece: str) -> None:
        """Append ``piece`` (any part of the stream; lines end at ``\n``)."""
        *complete, self._partial = (self._partial + piece).split("\n")
        for line in complete:
            if len(self._lines) == self._lines.maxlen:
                self.dropped += 1
            self._lines.append(line)

    def render(self) -> str:
        """The kept lines (the unfinished one too), under ``… N more lines`` when some were dropped."""
        shown = [*self._lines, self._partial] if self._partial else list(self._lines)
        if len(shown) > (self._lines.maxlen or 0):
            shown.pop(0)
            dropped = self.dropped + 1
        else:
            dropped = self.dropped
        head = [f"… {dropped} more lines"] if dropped else []
        return "\n".join(head + shown)


def _tail(output: str, lines: int = RESULT_LINES) -> str:
    kept = output.rstrip("\n").split("\n")
    if len(kept) <= lines:
        return "\n".join(kept)
    return f"… {len(kept) - lines} more lines\n" + "\n".join(kept[-lines:])


class TerminalView:
    """Draws ``agent``'s activity on ``console``; see the module docstring.

    The listeners are registered on ``root`` (and go with it). ``root`` is also where
    the view looks up the ``tools`` service for call presentations. ``input_fd`` is the
    terminal lines are typed on (None: none; its echo is then left alone).
    """

    def __init__(self, root: Context, agent: Agent, console: Console, input_fd: int | None = None) -> None:
        self.root = root
        self.agent = agent
        self.console = console
        self.echo = Echo(input_fd)
        self._status: Status | None = None
        self._spinning = ""
        self._output: OutputTail | None = None
        self._live: Live | None = None
        self._text = ""
        self._reasoning = ""
        self._typed: deque[str] = deque()  # lines shown by typed(), not yet logged as steering
        root.on(AGENT_STEP_START, self.on_step_start)
        root.on(BASH_OUTPUT, self.on_output)
        root.on(AGENT_STREAM_CHUNK, self.on_chunk)
        root.on(SESSION_EVENT, self.on_event)
        root.on(AGENT_TURN_END, self.on_turn_end)
        root.on(AGENT_RETRY, self.on_retry)

    # --------------------------------------------------------------- displays
    def _spin(self, message: str) -> None:
        self._settle()
        self.echo.hide()
        self._spinning = message
        self._status = self.console.status(message, spinner="dots")
        self._status.start()

    def _stop_spinner(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
        self._output = None

    def _answer(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self._reasoning:
            parts.append(Text(self._reasoning.strip(), style="dim italic"))
        if self._text:
            parts.append(Markdown(self._text))
        return Group(*parts)

    def _settle(self) -> None:
        """Stop the spinner and freeze the streamed answer on screen."""
        self._stop_spinner()
        if self._live is not None:
            self._live.update(self._answer(), refresh=True)
            self._live.stop()
            self._live = None
        self._text = ""
        self._reasoning = ""
        self.echo.show()

    def close(self) -> None:
        """Stop every live display and give the terminal its settings back (idempotent)."""
        self._settle()
        self.echo.restore()

    def typed(self, line: str) -> None:
        """Show ``line``, typed while the agent works, as the user's, on a line of its own.

        The displays running stop with what they show left on screen, the line follows,
        and the spinner that ran starts again below it (the stream goes on there).
        """
        self._print_user_line(line, resume_after_live=True)
        if self.agent.status == "running":  # it becomes a steering message: not to be shown twice
            self._typed.append(line)

    def _print_user_line(self, line: str, *, resume_after_live: bool) -> None:
        """``line`` as the user's on a line of its own; the spinner that ran starts again below it."""
        running = self._status is not None or (resume_after_live and self._live is not None)
        resume = self._spinning if running else ""
        self._settle()
        self.console.print(Text(f"› {line}", style="bold cyan"))
        if resume:
            self._spin(resume)

    def welcome(self, message: str) -> None:
        """Print the banner and the first prompt."""
        self.console.print(Panel(Text(message), border_style="cyan"))
        self.console.print(PROMPT, end="")

    def notice(self, message: str) -> None:
        """Print ``message`` on a line of its own, dimmed, then the prompt again."""
        self._settle()
        self.console.print()
        self.console.print(Text(message, style="dim"))
        self.console.print(PROMPT, end="")

    def question(self, message: str) -> None:
        """Print ``message`` as it is (no newline added), after stopping the live displays."""
        self._settle()
        self.console.print(Text(message, style="bold yellow"), end="")

    # -------------------------------------------------------------- listeners
    def on_step_start(self, agent: Agent, _turn: int, _step: int) -> None:
        if agent is self.agent:
            self._spin("thinking…")

    def on_chunk(self, agent: Agent, _turn: int, _step: int, chunk: StreamChunk) -> None:
        if agent is not self.agent:
            return
        if type(chunk) is TextDeltaChunk:
            self._text += chunk.text
        elif type(chunk) is ReasoningDeltaChunk:
            self._reasoning += chunk.text
        else:
            return
        if self._live is None:
            self._stop_spinner()
            self.echo.hide()
            self._spinning = "thinking…"
            self._live = Live(self._answer(), console=self.console, refresh_per_second=8, transient=False)
            self._live.start()
        else:
            self._live.update(self._answer())

    def on_output(self, agent: object | None, _stream: str, piece: str) -> None:
        """``bash/output``: the command's last lines under the spinner that says it runs."""
        status = self._status
        if agent is not self.agent or status is None:
            return
        if self._output is None:
            self._output = OutputTail()
        self._output.feed(piece)
        tail = Text(self._output.render(), style="dim", no_wrap=True, overflow="ellipsis")
        status.update(Group(Text(self._spinning), tail))

    def on_retry(self, agent: Agent, _turn: int, _step: int, notice: RetryNotice) -> None:
        if agent is self.agent:
            self._spin(f"retrying in {notice.delay_ms / 1000:.3g} s…")

    def on_event(self, session: Session, event: SessionEvent) -> None:
        if session is not self.agent.session:
            return
        if type(event) is ToolCallEvent:
            self._settle()
            self.console.print(self.call_card(event.data.name, event.data.arguments))
            self._spin(f"running {event.data.name}…")
        elif type(event) is ToolResultEvent:
            self._settle()
            self.console.print(self.result_card(event.data.content, is_error=event.data.is_error))
        elif type(event) is SteeringMessageEvent:  # on a line of its own, apart from the streamed answer
            said = text_of(event.data.content)
            if said in self._typed:  # typed() showed it already
                self._typed.remove(said)
                return
            self._print_user_line(said, resume_after_live=False)

    def on_turn_end(self, agent: Agent, turn: int, reason: TurnEndReason) -> None:
        if agent is not self.agent:
            return
        self._settle()
        if type(reason) is not CompletedReason:
            style = "yellow" if type(reason) in (AbortedReason, MaxTokensReason, MaxStepsReason) else "red"
            self.console.print(Text(f"turn {turn} ended: {describe_reason(reason)}", style=style))
        self.console.print(PROMPT, end="")

    # ------------------------------------------------------------------ cards
    def call_card(self, name: str, arguments: str) -> Panel:
        """The card of a tool call: the tool's presentation when it has one, else the raw arguments."""
        title, detail = f"{name} {arguments}", None
        tools = self.root.get(TOOLS)
        definition = tools.get(name) if tools is not None else None
        if definition is not None and definition.present_call is not None:
            try:
                presented = definition.present_call(json.loads(arguments))
            except Exception:
                presented = None
            if presented is not None:
                title = f"$ {presented.title}" if presented.kind == "execute" else presented.title
                detail = text_of(presented.content or ()) or None
        body: RenderableType = Text(title, style="bold")
        if detail is not None:
            body = Group(body, Text(detail, style="dim"))
        return Panel(body, title=name, title_align="left", border_style="cyan")

    def result_card(self, content: Iterable[ContentBlock], *, is_error: bool) -> Panel:
        """The card of a tool result: its last lines, red when the call failed."""
        output = text_of(content) or "(no output)"
        return Panel(
            Text(_tail(output)),
            title="error" if is_error else "result",
            title_align="left",
            border_style="red" if is_error else "green",
        )
