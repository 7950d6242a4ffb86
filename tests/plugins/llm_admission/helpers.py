"""What the llm-admission tests share: a hand-fired hold timer and a model whose answers a test releases."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from dsh.core.llm import GenerateOptions, LlmAdapter, Message, StreamChunk, TextDeltaChunk, text, text_of
from dsh.testing.scripted import text_response
from tests.agent_loop.helpers import until as until  # the loop tests' tick-bounded wait, shared

GATED = "gated"
"""The model name the tests serve with :class:`GatedModel`."""


# ----------------------------------------------------------------------------- clock
def _nothing() -> None:
    """What a cancelled alarm holds instead of its callback."""


@dataclass
class Alarm:
    """One hold timer: the plugin set it; the test fires it (or sees it cancelled)."""

    seconds: float
    callback: Callable[[], object]
    cancelled: bool = False
    fired: bool = False

    def cancel(self) -> None:
        self.cancelled = True
        self.callback = _nothing  # as asyncio's handles do: a cancelled timer keeps no reference to its callback

    def fire(self) -> None:
        assert not self.cancelled, "a cancelled alarm never fires"
        assert not self.fired, "an alarm fires once"
        self.fired = True
        self.callback()


@dataclass
class FakeTimer:
    """A :data:`~dsh.kernel.Timer` that never runs by itself: :meth:`Alarm.fire` runs one."""

    alarms: list[Alarm] = field(default_factory=list)

    def __call__(self, seconds: float, callback: Callable[[], object]) -> Alarm:
        alarm = Alarm(seconds, callback)
        self.alarms.append(alarm)
        return alarm

    @property
    def pending(self) -> list[Alarm]:
        """The alarms neither fired nor cancelled, in the order they were set."""
        return [alarm for alarm in self.alarms if not alarm.cancelled and not alarm.fired]


# ----------------------------------------------------------------------------- model
@dataclass
class Call:
    """One model call of :class:`GatedModel`: its first chunk waits for ``answer``, the rest for ``rest``."""

    options: GenerateOptions
    answer: asyncio.Event = field(default_factory=asyncio.Event)
    rest: asyncio.Event = field(default_factory=asyncio.Event)
    error: BaseException | None = None  # raised instead of the first chunk
    rest_error: BaseException | None = None  # raised after the first chunk
    started: bool = False  # the call's body runs (the request went out)
    answered: bool = False  # its first chunk went out
    closed: bool = False  # its body is over: ended, failed or closed

    @property
    def prompt(self) -> str:
        return text_of(self.options.messages[-1].content)

    def fail(self, error: BaseException) -> None:
        """Fail before the first chunk."""
        self.error = error
        self.answer.set()

    def fail_rest(self, error: BaseException) -> None:
        """Fail after the first chunk."""
        self.rest_error = error
        self.rest.set()


class GatedModel(LlmAdapter):
    """A model that answers ``reply to <prompt>`` once the test lets it; it counts its opening calls.

    A call is *opening* from the moment its body starts until its first chunk goes out (or
    it fails first). ``answer_all()`` releases the first chunk of every call, present and
    future; ``rest=True`` lets every call stream past its first chunk at once.
    """

    def __init__(self, *, rest: bool = True) -> None:
        self.calls: list[Call] = []
        self.opening = 0
        self.max_opening = 0
        self._auto_answer = False
        self._auto_rest = rest

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        call = Call(options)
        if self._auto_answer:
            call.answer.set()
        if self._auto_rest:
            call.rest.set()
        self.calls.append(call)
        return self._run(call)

    def answer_all(self) -> None:
        self._auto_answer = True
        for call in self.calls:
            call.answer.set()

    @property
    def started(self) -> list[Call]:
        return [call for call in self.calls if call.started]

    async def _run(self, call: Call) -> AsyncIterator[StreamChunk]:
        call.started = True
        self.opening += 1
        self.max_opening = max(self.max_opening, self.opening)
        first, *rest = text_response(f"reply to {call.prompt}")
        try:
            try:
                await call.answer.wait()
                if call.error is not None:
                    raise call.error
            finally:
                self.opening -= 1
            call.answered = True
            yield first
            await call.rest.wait()
            if call.rest_error is not None:
                raise call.rest_error
            for chunk in rest:
                yield chunk
        finally:
            call.closed = True


def has_started(model: GatedModel, count: int) -> Callable[[], bool]:
    """Whether ``count`` calls of ``model`` have started (for :func:`until`)."""
    return lambda: len(model.started) == count


def ask(prompt: str, model: str = GATED) -> GenerateOptions:
    """One user message for ``model``."""
    return GenerateOptions(model=model, messages=[Message(role="user", content=(text(prompt),))])


def texts(chunks: list[StreamChunk]) -> str:
    """The text the deltas of ``chunks`` spell."""
    return "".join(chunk.text for chunk in chunks if type(chunk) is TextDeltaChunk)


async def collect(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    """Every chunk of ``stream``, in order."""
    return [chunk async for chunk in stream]


async def ticks(count: int = 20) -> None:
    """Let the event loop run ``count`` rounds (zero sleeps, never wall-clock waits)."""
    for _ in range(count):
        await asyncio.sleep(0)
