"""What ui-stdio prints for agent activity (SPEC §15, "Rendering").

One :class:`Renderer` per output. Its only state is whether the output is inside a
dimmed reasoning run, which every other kind of output ends first.
"""

from __future__ import annotations

from collections.abc import Callable

from dsh.core.llm import ReasoningDeltaChunk, StreamChunk, TextDeltaChunk, text_of
from dsh.core.session import SessionEvent, SteeringMessageEvent, ToolCallEvent, ToolResultEvent

DIM = "\x1b[2m"
"""SGR "faint": starts a reasoning run."""

RESET = "\x1b[0m"
"""SGR reset: ends a reasoning run."""

PROMPT = "\n> "
"""Written after every turn (and after the welcome banner)."""


class Renderer:
    """Renders stream chunks, turn boundaries and tool activity through ``write``.

    ``write`` receives every piece of text in order and must not raise (an exception
    propagates to the emitter of the event being rendered, which fails that turn).
    Unknown chunk and event types render nothing.
    """

    __slots__ = ("_dim", "_write")

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._dim = False

    @property
    def dim(self) -> bool:
        """True inside a reasoning run (the output is in the faint style)."""
        return self._dim

    def chunk(self, chunk: StreamChunk) -> None:
        """``agent/stream-chunk``: reasoning is dimmed, text is written verbatim."""
        if type(chunk) is ReasoningDeltaChunk:
            if not self._dim:
                self._dim = True
                self._write(DIM)
            self._write(chunk.text)
        elif type(chunk) is TextDeltaChunk:
            self._undim("\n")
            self._write(chunk.text)

    def turn_start(self, agent_id: str, turn: int) -> None:
        """``agent/turn-start``: the ``[<agent> turn <n>]`` marker."""
        self._write(f"\n[{agent_id} turn {turn}] ")

    def turn_end(self) -> None:
        """``agent/turn-end``: end a reasoning run, then the prompt."""
        self._undim("")
        self._write(PROMPT)

    def session_event(self, event: SessionEvent) -> None:
        """``session/event``: ``tool/call``, ``tool/result`` and ``steering/message`` lines; nothing else.

        A steering line typed while the model streamed is shown again on a line of its
        own when the turn takes it, apart from the model's text.
        """
        if type(event) is ToolCallEvent:
            self._undim("")
            self._write(f"\n  [tool call] {event.data.name}({event.data.arguments})")
        elif type(event) is ToolResultEvent:
            self._write(f"\n  [tool result] {text_of(event.data.content)}\n  ")
        elif type(event) is SteeringMessageEvent:
            self._undim("")
            self._write(f"\n  [steering] {text_of(event.data.content)}\n")

    def _undim(self, after: str) -> None:
        if self._dim:
            self._dim = False
            self._write(RESET + after)
