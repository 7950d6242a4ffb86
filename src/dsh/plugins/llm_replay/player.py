"""Playing one replay entry as a model stream (SPEC §12)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from dsh.core.errors import HarnessError, LlmError, assert_never
from dsh.core.llm import UNSET, BlockStartChunk, StreamChunk, TextDeltaChunk
from dsh.kernel import AbortSignal
from dsh.plugins.llm_replay.entries import ChunksEntry, HangEntry, ReplayEntry, ThrowEntry

_HANG_START = BlockStartChunk(index=0, block_type="text")
_HANG_DELTA = TextDeltaChunk(index=0, text="partial")


def _aborted() -> HarnessError:
    return HarnessError("aborted", "ABORTED")


async def play_entry(
    script: Sequence[ReplayEntry], index: int, signal: AbortSignal | None
) -> AsyncIterator[StreamChunk]:
    """Stream ``script[index]`` as the answer to model call ``index`` (0-based).

    Nothing happens until the first iteration, where an index past the script
    raises ``REPLAY_EXHAUSTED``. ``chunks`` and ``throw`` entries check ``signal``
    before each chunk and raise ``HarnessError("aborted", "ABORTED")`` once it has
    fired; a ``throw`` entry then raises its ``LlmError``. A ``hang`` entry streams
    its two chunks, then waits for ``signal`` (returning at once if it already fired;
    forever, until cancelled, without one) and raises ``ABORTED``. Anything else in
    the script raises through :func:`~dsh.core.errors.assert_never` (``UNREACHABLE``).
    """
    if index >= len(script):
        raise HarnessError(
            f"llm-replay: script exhausted — requested model call #{index + 1} but the fixture has only "
            f"{len(script)}; re-record the scenario",
            "REPLAY_EXHAUSTED",
        )
    waiter = signal if signal is not None else AbortSignal()  # no signal: only cancellation ends a hang
    entry = script[index]
    match entry:
        case HangEntry():
            yield _HANG_START
            yield _HANG_DELTA
            await waiter.wait()
            raise _aborted()
        case ChunksEntry() | ThrowEntry():
            for chunk in entry.chunks:
                if waiter.aborted:
                    raise _aborted()
                yield chunk
            if isinstance(entry, ThrowEntry):
                raise LlmError(entry.message, entry.code, entry.status if entry.status is not UNSET else None)
        case _:
            assert_never(entry, "llm-replay replay entry")
