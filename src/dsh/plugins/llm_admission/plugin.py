"""The ``llm-admission`` plugin: model requests start a few at a time, first come, first served.

Why: in a process hosting many agents, every request that starts costs the event
loop work (connecting, sending, the first read) on top of the streams already
running. Started all at once, a thousand of them hold the loop for whole seconds of
turns, each of 100 ms and more, and every chunk in flight waits that long
(``docs/scaling.md``). Here a request *opens* (the call beneath starts, connects and
sends) only while fewer than ``maxOpening`` others are opening; it stays opening until
its first chunk arrives, its stream fails or is closed, or ``holdMs`` passes (a model
slow to answer does not keep the next requests waiting: after ``holdMs`` its slot
passes on while it keeps waiting for its answer). The limit is self-clocking: the busier
the loop, the longer an opening takes, the fewer start per second. ``maxStreams``
(optional) caps the requests in flight at all (a provider's concurrency quota): a
request then also waits for one of those, held until its stream ends or is closed.

Config (YAML keys camelCase; snake_case accepted too): ``maxOpening`` (default
:data:`DEFAULT_MAX_OPENING`), ``holdMs`` (default :data:`DEFAULT_HOLD_MS`),
``maxStreams`` (default none).

The plugin adds one ``llm/stream`` listener: every model stream through this tree
(``generate`` drains ``stream``) waits its turn before calling ``next()``, so the
listeners beneath it and the adapter see the call only once it is admitted. Waiting
costs nothing per chunk: once the first chunk is through, the wrapper hands each
``__anext__`` of the stream beneath to its consumer as is (with ``maxStreams`` it also
watches for the end). Cancellation: a request waiting for a slot stops when the
request's abort signal fires (``AbortError`` with its reason, what the adapters raise)
or its task is cancelled; it holds nothing then. A stream dropped without ``aclose()``
gives its slots back when it is freed. Unloading the plugin removes the listener:
requests already admitted keep their streams.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from dsh.core.llm import LLM, LLM_STREAM, GenerateOptions, StreamChunk
from dsh.kernel import Context, PluginSpec, Timer, TimerHandle
from dsh.plugins.llm_admission.slots import Slots

name = "llm-admission"
inject = [LLM.name]

DEFAULT_MAX_OPENING = 8
"""Requests opening at once; measured in ``docs/benchmarks.md`` (session 13)."""

DEFAULT_HOLD_MS = 250
"""The longest a request waiting for its first chunk keeps its opening slot, in ms."""


class Config(BaseModel):
    """The plugin's config; see the module docstring."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    max_opening: PositiveInt = Field(default=DEFAULT_MAX_OPENING, alias="maxOpening")
    hold_ms: PositiveInt = Field(default=DEFAULT_HOLD_MS, alias="holdMs")
    max_streams: PositiveInt | None = Field(default=None, alias="maxStreams")


class Admission:
    """The limits of one loaded plugin and their counts (read them; do not change them).

    ``timer`` schedules the ``holdMs`` timeouts (None: the running loop's ``call_later``).
    """

    __slots__ = ("hold", "opening", "streams", "timer")

    def __init__(self, config: Config, timer: Timer | None = None) -> None:
        self.opening = Slots(config.max_opening)
        self.streams = Slots(config.max_streams) if config.max_streams is not None else None
        self.hold = config.hold_ms / 1000
        self.timer = timer

    def stream(self, options: GenerateOptions, beneath: Callable[[], AsyncIterator[StreamChunk]]) -> AdmittedStream:
        """The ``llm/stream`` listener: ``beneath`` is called once this request is admitted."""
        return AdmittedStream(self, options, beneath)


class AdmittedStream:
    """One model stream behind the plugin's limits: an async iterator of its chunks.

    The first ``__anext__`` waits for the slots, calls ``next()`` and waits for the
    first chunk; later ones are the stream beneath's own. ``aclose()`` closes the
    stream beneath and gives back what it holds; so does the stream's end or failure.
    """

    __slots__ = ("_admission", "_beneath", "_hold", "_inner", "_open", "_options", "_streaming")

    def __init__(
        self, admission: Admission, options: GenerateOptions, beneath: Callable[[], AsyncIterator[StreamChunk]]
    ) -> None:
        self._admission = admission
        self._options = options
        self._beneath: Callable[[], AsyncIterator[StreamChunk]] | None = beneath  # None once called or closed
        self._inner: AsyncIterator[StreamChunk] | None = None
        self._open = False  # holds an opening slot
        self._streaming = False  # holds a stream slot
        self._hold: TimerHandle | None = None  # the holdMs timeout while it holds an opening slot

    def __aiter__(self) -> AdmittedStream:
        return self

    def __anext__(self) -> Awaitable[StreamChunk]:
        inner = self._inner
        if inner is None:
            return self._first()
        if self._streaming:
            return self._watched(inner)
        return inner.__anext__()

    async def _first(self) -> StreamChunk:
        beneath = self._beneath
        if beneath is None:  # closed before it started, or the call beneath failed
            raise StopAsyncIteration
        await self._admit()
        try:
            self._beneath = None
            inner = self._inner = beneath()
            chunk = await inner.__anext__()
        except BaseException:
            self._let_go()
            raise
        self._end_opening()
        return chunk

    async def _admit(self) -> None:
        admission = self._admission
        signal = self._options.signal
        streams = admission.streams
        if streams is not None:
            await streams.take(signal)
            self._streaming = True
        try:
            await admission.opening.take(signal)
        except BaseException:
            self._let_go()
            raise
        self._open = True
        timer = admission.timer or asyncio.get_running_loop().call_later
        self._hold = timer(admission.hold, self._end_opening)

    async def _watched(self, inner: AsyncIterator[StreamChunk]) -> StreamChunk:
        try:
            return await inner.__anext__()
        except BaseException:
            self._let_go()
            raise

    def _end_opening(self) -> None:
        """Give back the opening slot (the first chunk came, or ``holdMs`` passed); idempotent."""
        hold, self._hold = self._hold, None
        if hold is not None:
            hold.cancel()
        if self._open:
            self._open = False
            self._admission.opening.give()

    def _let_go(self) -> None:
        """Give back every slot this stream holds (idempotent)."""
        self._end_opening()
        if self._streaming:
            self._streaming = False
            streams = self._admission.streams
            assert streams is not None  # only a limit hands out stream slots
            streams.give()

    def __del__(self) -> None:
        """Abandoned without :meth:`aclose` (against the ``llm/stream`` contract): give back what it holds."""
        if self._open or self._streaming:
            with contextlib.suppress(RuntimeError):  # the event loop is already closed: nobody waits any more
                self._let_go()

    async def aclose(self) -> None:
        """Close the stream beneath (if it started) and give back what this one holds."""
        self._beneath = None
        inner, self._inner = self._inner, None
        try:
            close: Any = getattr(inner, "aclose", None)
            if close is not None:
                await close()
        finally:
            self._let_go()


def install_admission(ctx: Context, config: Config, timer: Timer | None = None) -> Admission:
    """Put every model stream made through ``ctx``'s kernel behind ``config``'s limits.

    Adds one ``llm/stream`` listener owned by ``ctx``'s fiber and returns the
    :class:`Admission` whose counts it keeps (``opening.held``, ``opening.waiting``,
    and ``streams`` likewise when ``maxStreams`` is set).
    """
    admission = Admission(config, timer)
    ctx.on(LLM_STREAM, admission.stream)
    return admission


def admission_plugin(timer: Timer | None = None) -> PluginSpec:
    """The ``llm-admission`` plugin with its clock (``timer``; tests pass a fake one)."""

    def start(ctx: Context, config: Config) -> None:
        install_admission(ctx, config, timer)

    return PluginSpec(name=name, apply=start, Config=Config, inject=list(inject))


def apply(ctx: Context, config: Config) -> None:
    """Install the limits with the event loop's clock; see the module docstring."""
    install_admission(ctx, config)
